// The child's config file: the one channel for secret values. tmpfs, 0600, created exclusively,
// unlinked in `finally`; a worker's start sweeps leftovers of runs that are no longer active.
import { constants, existsSync, statSync } from "node:fs";
import { open, readdir, stat, unlink } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import type { ChildConfig } from "./contract.js";

const PREFIX = "sandcastle-";
const SUFFIX = ".json";

export function configFileName(runId: string): string {
  return `${PREFIX}${runId}${SUFFIX}`;
}

/** SANDCASTLE_CONFIG_DIR, else /dev/shm (RAM only), else the OS tmpdir (with a warning from the caller). */
export function resolveConfigDir(setting: string | undefined): { dir: string; onTmpfs: boolean } {
  if (setting) return { dir: setting, onTmpfs: setting.startsWith("/dev/shm") };
  if (existsSync("/dev/shm") && statSync("/dev/shm").isDirectory()) return { dir: "/dev/shm", onTmpfs: true };
  return { dir: tmpdir(), onTmpfs: false };
}

export async function writeChildConfig(dir: string, config: ChildConfig): Promise<string> {
  const path = join(dir, configFileName(config.run_id));
  // O_EXCL: never write into a file someone else prepared (or a symlink they planted).
  const fh = await open(path, constants.O_WRONLY | constants.O_CREAT | constants.O_EXCL | constants.O_NOFOLLOW, 0o600);
  try {
    await fh.writeFile(JSON.stringify(config));
  } finally {
    await fh.close();
  }
  return path;
}

export async function removeChildConfig(path: string): Promise<void> {
  await unlink(path).catch((err: NodeJS.ErrnoException) => {
    if (err.code !== "ENOENT") throw err;
  });
}

/**
 * Remove config files of runs not in `activeRunIds`; returns the run ids swept.
 * Files younger than `minAgeMs` are left: a run that became active after the caller listed active runs may own one.
 */
export async function sweepChildConfigs(dir: string, activeRunIds: ReadonlySet<string>, minAgeMs = 60_000): Promise<string[]> {
  let names: string[];
  try {
    names = await readdir(dir);
  } catch {
    return [];
  }
  const swept: string[] = [];
  for (const name of names) {
    if (!name.startsWith(PREFIX) || !name.endsWith(SUFFIX)) continue;
    const runId = name.slice(PREFIX.length, -SUFFIX.length);
    if (activeRunIds.has(runId)) continue;
    const info = await stat(join(dir, name)).catch(() => null);
    if (info === null || Date.now() - info.mtimeMs < minAgeMs) continue;
    await removeChildConfig(join(dir, name));
    swept.push(runId);
  }
  return swept;
}
