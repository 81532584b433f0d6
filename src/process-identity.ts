// A process as /proc shows it (its stat fields, read one way for the whole project), and a process named so that
// another process on the machine can tell, later, whether it still runs: its pid alone is not enough (pids are
// reused), so its start time (since the machine's boot) and the boot itself go with it.
import { readFileSync } from "node:fs";
import { hostname } from "node:os";

const readOr = (path: string): string | undefined => {
  try {
    return readFileSync(path, "utf8");
  } catch {
    return undefined;
  }
};

/**
 * The fields of `/proc/<pid>/stat` after its comm, which may hold spaces and parens: [0] state, [1] ppid, [2] pgrp,
 * [19] start time in clock ticks since boot. Undefined when there is no such process (or no /proc).
 */
export function procStat(pid: number | "self"): string[] | undefined {
  const stat = readOr(`/proc/${pid}/stat`);
  return stat === undefined ? undefined : stat.slice(stat.lastIndexOf(")") + 2).split(" ");
}

const startTicks = (pid: number | "self"): string | undefined => procStat(pid)?.[19];

const bootId = () => readOr("/proc/sys/kernel/random/boot_id")?.trim() ?? "";

/** This process, as one line: `<host> <boot id> <pid> <start ticks>`. */
export function ownIdentity(): string {
  return [hostname(), bootId() || "-", process.pid, startTicks("self") ?? "-"].join(" ");
}

/**
 * Whether the process `identity` names still runs: true or false on the machine (and boot) that wrote it; undefined
 * when it cannot be told here (another machine, or a /proc that shows no start time).
 */
export function identityLives(identity: string): boolean | undefined {
  const [host, boot, pidText, ticks] = identity.trim().split(" ");
  const pid = Number(pidText);
  if (host !== hostname() || !Number.isInteger(pid) || pid <= 0 || ticks === undefined || ticks === "-") return undefined;
  if (boot !== (bootId() || "-")) return false;
  return startTicks(pid) === ticks;
}
