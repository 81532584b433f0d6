// A run's private directory on tmpfs, SANDCASTLE_CONFIG_DIR/scq-run-<run_id>/ (0700): the config file
// (the one channel for secret values) and anything else of the run that must stay off disk. The worker
// creates it, marked with its deployment, before the child starts and removes it whole when the run ends;
// a worker's start and a run declared lost remove its own deployment's leftovers, whatever their age, and
// nothing of another deployment's (ADR 0044).
import { existsSync, statSync } from "node:fs";
import { chmod, mkdir, readdir, rm } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { markDeployment, outlivedAnyRun, type Deployment } from "../deployment.js";

const PREFIX = "scq-run-";
/** Config files of the layout before run directories (`sandcastle-<run_id>.json`), swept alike. */
const LEGACY_CONFIG = /^sandcastle-(.+)\.json$/;

/** SANDCASTLE_CONFIG_DIR, else /dev/shm (RAM only), else the OS tmpdir (with a warning from the caller). */
export function resolveConfigDir(setting: string | undefined): { dir: string; onTmpfs: boolean } {
  if (setting) return { dir: setting, onTmpfs: setting.startsWith("/dev/shm") };
  if (existsSync("/dev/shm") && statSync("/dev/shm").isDirectory()) return { dir: "/dev/shm", onTmpfs: true };
  return { dir: tmpdir(), onTmpfs: false };
}

export function runDirPath(configDir: string, runId: string): string {
  return join(configDir, `${PREFIX}${runId}`);
}

/** Creates the run's directory, 0700, marked with `deployment`; fails (EEXIST) when anything, a planted symlink included, is already there. */
export async function createRunDir(configDir: string, runId: string, deployment: string): Promise<string> {
  const path = runDirPath(configDir, runId);
  await mkdir(path, { mode: 0o700 });
  // mkdir's mode is masked by the umask; the directory must be 0700 whatever the umask.
  await chmod(path, 0o700);
  await markDeployment(path, deployment);
  return path;
}

export async function removeRunDir(configDir: string, runId: string): Promise<void> {
  await rm(runDirPath(configDir, runId), { recursive: true, force: true });
}

/**
 * Removes the run directories (and legacy config files) of this deployment's runs that are not active; returns
 * their run ids. The directory is listed before the active runs are asked for: a run that made its directory
 * after the listing is not seen, and one that made it before is already active, so a live run is never swept.
 * Another deployment's are never touched; an unmarked one (an older version's) only once it outlived any run.
 */
export async function sweepRunDirs(configDir: string, deployment: Deployment, activeRunIds: () => Promise<ReadonlySet<string>>): Promise<string[]> {
  let names: string[];
  try {
    names = await readdir(configDir);
  } catch {
    return [];
  }
  const candidates = names.flatMap((name) => {
    const runId = name.startsWith(PREFIX) ? name.slice(PREFIX.length) : LEGACY_CONFIG.exec(name)?.[1];
    return runId === undefined || runId.length === 0 ? [] : [{ name, runId }];
  });
  if (candidates.length === 0) return [];
  const active = await activeRunIds();
  const swept: string[] = [];
  for (const { name, runId } of candidates) {
    if (active.has(runId)) continue;
    const path = join(configDir, name);
    const owner = await deployment.ownerOf(path, runId);
    if (owner === "another" || (owner === "unknown" && !(await outlivedAnyRun(path)))) continue;
    await rm(path, { recursive: true, force: true });
    swept.push(runId);
  }
  return swept;
}
