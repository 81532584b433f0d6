// The child's own processes: its process group (the worker spawns it detached, so it leads one)
// and its descendants. Sandcastle's noSandbox provider does not kill the agent when a run is
// aborted, so the child ends them itself. Everything here is synchronous so it can run from
// an `exit` handler.
import { readdirSync } from "node:fs";
import { procStat } from "../../process-identity.js";

interface ProcInfo {
  readonly pid: number;
  readonly ppid: number;
  readonly pgid: number;
}

function readStat(pid: number | "self"): ProcInfo | undefined {
  const fields = procStat(pid);
  if (fields === undefined) return undefined;
  const ppid = Number(fields[1]);
  const pgid = Number(fields[2]);
  if (!Number.isInteger(ppid) || !Number.isInteger(pgid)) return undefined;
  return { pid: pid === "self" ? process.pid : pid, ppid, pgid };
}

function listProcesses(): ProcInfo[] | undefined {
  let names: string[];
  try {
    names = readdirSync("/proc");
  } catch {
    return undefined;
  }
  const out: ProcInfo[] = [];
  for (const name of names) {
    if (!/^\d+$/.test(name)) continue;
    const info = readStat(Number(name));
    if (info) out.push(info);
  }
  return out;
}

/** True when this process leads its process group (pgid === pid). Unknown (no /proc) counts as false. */
export function isGroupLeader(): boolean {
  const self = readStat("self");
  return self !== undefined && self.pgid === process.pid;
}

/** Our descendants (by parent links) plus, when we lead a group, every other member of it. */
export function ownedProcesses(): number[] {
  const all = listProcesses();
  if (!all) return [];
  const leader = isGroupLeader();
  const children = new Map<number, number[]>();
  for (const p of all) {
    const list = children.get(p.ppid) ?? [];
    list.push(p.pid);
    children.set(p.ppid, list);
  }
  const owned = new Set<number>();
  const queue = [...(children.get(process.pid) ?? [])];
  while (queue.length > 0) {
    const pid = queue.pop()!;
    if (owned.has(pid)) continue;
    owned.add(pid);
    queue.push(...(children.get(pid) ?? []));
  }
  if (leader) for (const p of all) if (p.pgid === process.pid) owned.add(p.pid);
  owned.delete(process.pid);
  return [...owned];
}

/** Signals every owned process (a few sweeps, to catch ones forked mid-sweep). Returns how many were signalled. */
export function signalOwnedProcesses(signal: NodeJS.Signals, sweeps = 3): number {
  let count = 0;
  for (let i = 0; i < sweeps; i++) {
    const pids = ownedProcesses();
    if (pids.length === 0) break;
    for (const pid of pids) {
      try {
        process.kill(pid, signal);
        count++;
      } catch {
        // already gone
      }
    }
  }
  return count;
}

/**
 * Ends the whole group, this process included, when it leads one; otherwise kills the
 * descendants and leaves exiting to the caller. Never signals a group we do not lead.
 */
export function killOwnGroup(): void {
  signalOwnedProcesses("SIGKILL");
  if (isGroupLeader()) {
    try {
      process.kill(-process.pid, "SIGKILL");
    } catch {
      // fall through: the caller exits
    }
  }
}
