// What a run's egress proxy decided, as its child reported it (egress records): the result's `egress` — how many
// connections were allowed and denied, and the denied hosts — and the connections each audit row is written for.
import type { EgressRecord } from "../protocol.js";

/** A run that asks for a hundred hosts is reported by its first ones. */
const MAX_DENIED_HOSTS = 50;

export class EgressLedger {
  private allowed = 0;
  private readonly denied: Array<{ host: string; port: number }> = [];

  /** `active`: the run had a policy (otherwise its summary is null). */
  constructor(private readonly active: boolean) {}

  add(record: EgressRecord): void {
    if (record.decision === "allowed") this.allowed += 1;
    else this.denied.push({ host: record.host, port: record.port });
  }

  get deniedConnections(): ReadonlyArray<{ host: string; port: number }> {
    return this.denied;
  }

  get summary(): { allowed: number; denied: number; denied_hosts: string[] } | null {
    if (!this.active) return null;
    const hosts = [...new Set(this.denied.map((d) => `${d.host}:${d.port}`))];
    return { allowed: this.allowed, denied: this.denied.length, denied_hosts: hosts.slice(0, MAX_DENIED_HOSTS) };
  }
}
