// Temp dirs a child leaves when it is SIGKILLed from outside (its raw Sandcastle logs may hold secrets).
// The child's env has no TMPDIR, so they are always under /tmp.
import { readdir, rm, stat } from "node:fs/promises";
import { join } from "node:path";

export const CHILD_TMP = "/tmp";
const LEFTOVER = /^scq-(?:logs|gitconfig)-(run-[0-9a-f-]{36})-/;

/** Remove leftovers of runs not in `activeRunIds` and older than `minAgeMs`; returns the paths removed. */
export async function sweepChildTempDirs(activeRunIds: ReadonlySet<string>, dir = CHILD_TMP, minAgeMs = 60_000): Promise<string[]> {
  let names: string[];
  try {
    names = await readdir(dir);
  } catch {
    return [];
  }
  const removed: string[] = [];
  for (const name of names) {
    const runId = LEFTOVER.exec(name)?.[1];
    if (runId === undefined || activeRunIds.has(runId)) continue;
    const path = join(dir, name);
    const info = await stat(path).catch(() => null);
    if (info === null || Date.now() - info.mtimeMs < minAgeMs) continue;
    await rm(path, { recursive: true, force: true });
    removed.push(path);
  }
  return removed;
}
