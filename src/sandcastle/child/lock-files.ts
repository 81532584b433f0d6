// Exclusive lock files (O_EXCL create, holding the owner's pid) in the repo's git common dir,
// shared by every child working on that repository. A lock whose owner is dead is taken over.
import { closeSync, openSync, readFileSync, statSync, unlinkSync, writeSync } from "node:fs";

const held = new Set<string>();

export interface LockOptions {
  /** A lock older than this is taken over even if its pid answers (pid reuse). Omit for long-held locks. */
  readonly staleAfterMs?: number;
}

function ownerPid(path: string): number | undefined {
  try {
    const pid = Number.parseInt(readFileSync(path, "utf8"), 10);
    return Number.isInteger(pid) && pid > 0 ? pid : undefined;
  } catch {
    return undefined;
  }
}

function ownerAlive(path: string, options: LockOptions): boolean {
  const pid = ownerPid(path);
  if (pid === undefined) return false;
  try {
    process.kill(pid, 0);
  } catch (error) {
    // EPERM: alive, just not ours to signal.
    if ((error as NodeJS.ErrnoException).code !== "EPERM") return false;
  }
  if (options.staleAfterMs === undefined) return true;
  try {
    return Date.now() - statSync(path).mtimeMs < options.staleAfterMs;
  } catch {
    return false;
  }
}

/** One attempt. Returns undefined when acquired, else the pid holding it. */
export function tryLock(path: string, content: string, options: LockOptions = {}): number | undefined {
  for (let attempt = 0; attempt < 3; attempt++) {
    try {
      const fd = openSync(path, "wx", 0o644);
      writeSync(fd, `${process.pid}\n${content}\n`);
      closeSync(fd);
      held.add(path);
      return undefined;
    } catch (error) {
      if ((error as NodeJS.ErrnoException).code !== "EEXIST") throw error;
      if (ownerAlive(path, options)) return ownerPid(path) ?? -1;
      try {
        unlinkSync(path); // stale: its owner is gone
      } catch {
        // someone else took it over first
      }
    }
  }
  return ownerPid(path) ?? -1;
}

export function unlock(path: string): void {
  if (!held.delete(path)) return;
  try {
    unlinkSync(path);
  } catch {
    // already gone
  }
}

/** Exit path: drop every lock this process still holds. */
export function releaseAllLocks(): void {
  for (const path of [...held]) unlock(path);
}
