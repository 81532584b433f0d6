// Ending a run's processes: the child leads its own process group; we signal the group,
// and also every descendant found under /proc (a descendant that left the group with setsid
// but is still in the tree). A double-forked daemon that was re-parented to init escapes both: see ADR 0002.
import { readdirSync } from "node:fs";
import { procStat } from "../../process-identity.js";

const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

export function groupAlive(pgid: number): boolean {
  try {
    process.kill(-pgid, 0);
    return true;
  } catch (err) {
    return (err as NodeJS.ErrnoException).code === "EPERM";
  }
}

/** Pids of all descendants of `root` (Linux /proc; empty elsewhere). */
export function descendantsOf(root: number): number[] {
  const children = new Map<number, number[]>();
  let entries: string[];
  try {
    entries = readdirSync("/proc");
  } catch {
    return [];
  }
  for (const name of entries) {
    if (!/^\d+$/.test(name)) continue;
    const fields = procStat(Number(name));
    if (fields === undefined) continue; // exited while we looked
    const ppid = Number(fields[1]);
    const list = children.get(ppid) ?? [];
    list.push(Number(name));
    children.set(ppid, list);
  }
  const out: number[] = [];
  const stack = [root];
  while (stack.length > 0) {
    for (const c of children.get(stack.pop()!) ?? []) {
      out.push(c);
      stack.push(c);
    }
  }
  return out;
}

function signalAll(pgid: number, extra: readonly number[], signal: NodeJS.Signals): void {
  try {
    process.kill(-pgid, signal);
  } catch {
    // group already gone
  }
  for (const pid of extra) {
    try {
      process.kill(pid, signal);
    } catch {
      // already gone
    }
  }
}

/**
 * SIGTERM to the group and its descendants, then SIGKILL after `graceMs` if anything is left.
 * Resolves when the group is gone (or `graceMs + 3 s` passed).
 */
export async function terminateTree(pgid: number, graceMs: number): Promise<"terminated" | "killed"> {
  const tree = descendantsOf(pgid);
  signalAll(pgid, tree, "SIGTERM");
  const deadline = Date.now() + graceMs;
  while (Date.now() < deadline) {
    if (!groupAlive(pgid) && tree.every((p) => !pidAlive(p))) return "terminated";
    await sleep(50);
  }
  signalAll(pgid, [...new Set([...tree, ...descendantsOf(pgid)])], "SIGKILL");
  const hard = Date.now() + 3000;
  while (groupAlive(pgid) && Date.now() < hard) await sleep(25);
  return "killed";
}

function pidAlive(pid: number): boolean {
  try {
    process.kill(pid, 0);
    return true;
  } catch {
    return false;
  }
}
