// The audit trail (AUDIT_LOG_PATH): validated rows from the closed event set, redacted, one whole line each,
// hash-chained so an edit shows (chain.ts, ADR 0019).
import { formatIssues } from "../invalid-input.js";
import type { Redactor } from "../redact/index.js";
import { AuditEvent } from "./events.js";
import { ChainedLog } from "./chain.js";

export class AuditLog {
  private readonly log: ChainedLog;

  constructor(
    path: string,
    private readonly redactor: Redactor,
  ) {
    this.log = new ChainedLog(path);
  }

  get path(): string {
    return this.log.path;
  }

  /** Writes one row; `extraRedactor` adds the secret values known for one run. */
  async emit(event: AuditEvent, extraRedactor?: Redactor): Promise<void> {
    const parsed = AuditEvent.safeParse(event);
    if (!parsed.success) throw new Error(`audit row ${event.type} is invalid: ${formatIssues(parsed.error)}`);
    const redact = (text: string) => (extraRedactor ? extraRedactor.line(this.redactor.line(text)) : this.redactor.line(text));
    this.log.append(redactStrings({ ts: new Date().toISOString(), ...parsed.data }, redact) as Record<string, unknown>);
  }

  async close(): Promise<void> {
    this.log.close();
  }
}

/** Redact every string inside a row, so a rule can never break the JSON around it. */
export function redactStrings(value: unknown, redact: (text: string) => string): unknown {
  if (typeof value === "string") return redact(value);
  if (Array.isArray(value)) return value.map((v) => redactStrings(v, redact));
  if (value !== null && typeof value === "object") {
    return Object.fromEntries(Object.entries(value).map(([k, v]) => [k, redactStrings(v, redact)]));
  }
  return value;
}
