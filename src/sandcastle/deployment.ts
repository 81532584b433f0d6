// A deployment: one sandcastle-queue installation, named by its key prefix and its Redis (password masked).
// Deployments on one machine share SANDCASTLE_CONFIG_DIR and, by default, RUNS_DIR: each directory a worker makes
// there for a run holds a file naming its deployment, and a worker's sweeps and reaps, and the CLI's listings,
// take only their own deployment's (ADR 0044). Containers carry the same name as a label (run-containers.ts).
import { readFile, stat, writeFile } from "node:fs/promises";
import { join } from "node:path";
import { describeTarget, type RedisTarget } from "../redis/target.js";
import { KILL_GRACE_MS, MAX_TIMEOUT_MINUTES } from "./contract.js";

/** The deployment's name: the key prefix and where Redis is (password masked). */
export function deploymentLabel(prefix: string, target: RedisTarget): string {
  return `${prefix}@${describeTarget(target)}`;
}

/** In a run's directory (SANDCASTLE_CONFIG_DIR/scq-run-<run_id>/, RUNS_DIR/<run_id>/): the label of the deployment that made it. */
export const DEPLOYMENT_FILE = "deployment";

/**
 * An unmarked directory (made before directories were marked, or by an older version) this much older than now
 * outlived any run that could have made it: the longest timeout, the kill grace, and an hour for a run's start and end.
 */
export const UNMARKED_STALE_MS = MAX_TIMEOUT_MINUTES * 60_000 + KILL_GRACE_MS + 3_600_000;

/** ours: marked with our label, or unmarked while our Redis holds the run's job; another: another label; unknown: unmarked, a run our Redis does not know. */
export type Owner = "ours" | "another" | "unknown";

/** Writes the deployment's mark into a directory it made; a mark already there is left as it is. */
export async function markDeployment(dir: string, label: string): Promise<void> {
  try {
    await writeFile(join(dir, DEPLOYMENT_FILE), `${label}\n`, { mode: 0o600, flag: "wx" });
  } catch (err) {
    if ((err as NodeJS.ErrnoException).code !== "EEXIST") throw err;
  }
}

export class Deployment {
  constructor(
    readonly label: string,
    /** Whether this deployment's Redis holds the run's job: what shows that an unmarked directory is its own. */
    private readonly holdsRun: (runId: string) => Promise<boolean>,
  ) {}

  /** Whose is `path`, run `runId`'s directory (or a legacy file, which holds no mark). */
  async ownerOf(path: string, runId: string): Promise<Owner> {
    let mark: string;
    try {
      mark = await readFile(join(path, DEPLOYMENT_FILE), "utf8");
    } catch (err) {
      const code = (err as NodeJS.ErrnoException).code;
      // A mark that is there but cannot be read is not ours to judge.
      if (code !== "ENOENT" && code !== "ENOTDIR") return "another";
      return (await this.holdsRun(runId)) ? "ours" : "unknown";
    }
    return mark.trimEnd() === this.label ? "ours" : "another";
  }

  /** Marks one of its own directories (an unmarked one made before marks, found to be its own). */
  mark(dir: string): Promise<void> {
    return markDeployment(dir, this.label);
  }
}

/** Whether an unmarked directory outlived any run that could have made it: nobody's any more, whoever made it. */
export async function outlivedAnyRun(path: string, now = Date.now()): Promise<boolean> {
  // The mtime is never earlier than the directory's making (entries added since only move it later).
  const st = await stat(path).catch(() => null);
  return st !== null && now - st.mtimeMs > UNMARKED_STALE_MS;
}
