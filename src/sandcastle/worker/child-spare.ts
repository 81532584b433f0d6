// One run child started ahead of its run: node and the child's modules (Sandcastle's library the heaviest) loaded
// while no run waits, so a run starts on a warm process. Only the built-in child knows `--config-on-stdin`. The spare
// gets the same argv prefix, env and process group as a child started for its run; its run comes as a line of its
// stdin (SpareHandoff), and a spare whose worker let it go (stdin closed) exits by itself.
// Once the worker has run a container run of one phase, each spare also starts a warm container shaped like it (ADR
// 0053): the spare gets two directories of its own, in SANDCASTLE_CONFIG_DIR and RUNS_DIR, marked with the deployment
// and the worker, and the last run's config with no env. A run that may take the warm container claims the spare: those
// directories become the run's (a rename; the container's mounts follow them), and the child takes the container if
// the run's has the same shape. A spare's directories go with it when no run claimed it.
import { randomUUID } from "node:crypto";
import { lstat, mkdir, readdir, readFile, rename, rm, writeFile } from "node:fs/promises";
import { join } from "node:path";
import { identityLives, ownIdentity } from "../../process-identity.js";
import type { ChildConfig, SpareHandoff, SpareWarmth } from "../contract.js";
import { DEPLOYMENT_FILE, markDeployment } from "../deployment.js";
import { AGENT_WORK_DIR, ensureRunsDir, retainedDir } from "../retention/retained-runs.js";
import type { ChildCommand } from "./child-command.js";
import { groupAlive, terminateTree } from "./process-tree.js";
import { runDirPath } from "./run-dir.js";
import { startChild, type StartedChild } from "./supervise.js";

const running = (child: StartedChild) => child.nodeChildProcess.exitCode === null && child.nodeChildProcess.signalCode === null;

/** A spare has no run yet: it works where nothing of a run is (the hand-over moves it to the run's repository). */
const SPARE_CWD = "/";
/**
 * The next spare starts this long after one was taken, or at its run's result if that comes first (RunEnd): by then the
 * run's own start-up is over (a container run's agent starts within ~0.5–1.5 s on 2 cores), and any real agent works
 * far longer, so the next run of a backlog starts on a warm child without a spare's start slowing this run's.
 */
export const REFILL_AFTER_TAKE_MS = 3000;
/** A spare's directories: SANDCASTLE_CONFIG_DIR/scq-spare-<uuid>/ and RUNS_DIR/spare-<uuid>/. */
const SPARE_RUN_DIR = "scq-spare-";
const SPARE_WORK_DIR = "spare-";
/** In each of a spare's directories: the worker it belongs to (process-identity.ts), for the sweep of a dead worker's. */
const SPARE_OF_FILE = "spare-of";

/** Where a worker keeps its spares' directories, and how it removes a spare's container (by its run-id label, the spare's id). */
export interface SpareHome {
  readonly configDir: string;
  readonly runsDir: string;
  readonly deployment: string;
  readonly removeContainers?: (spareId: string) => Promise<unknown>;
}

interface SpareDirs {
  readonly id: string;
  readonly run: string;
  readonly work: string;
}

interface Spare {
  readonly child: StartedChild;
  readonly dirs?: SpareDirs;
  claimed: boolean;
}

/** A spare claimed by a run: its directories are the run's; hand it the run, or release it. */
export interface ClaimedSpare {
  readonly runDir: string;
  /** The spare, handed its run; null when it died meanwhile (the run starts a child of its own). */
  hand(handoff: SpareHandoff): StartedChild | null;
  /** Not handed a run: ended. */
  release(): Promise<void>;
}

export class ChildSpare {
  private spare: Spare | null = null;
  private closed = false;
  private starting = false;
  /** The last container run's config, less its env: the shape of each spare's warm container. */
  private template: ChildConfig | undefined;

  constructor(
    private readonly child: ChildCommand,
    private readonly env: Readonly<Record<string, string>>,
    private readonly warmth?: SpareHome,
  ) {}

  /** A container run of one phase: the next spares start a warm container shaped like it. */
  remember(config: ChildConfig): void {
    if (this.warmth === undefined) return;
    const { ends_by: _endsBy, ...rest } = config;
    this.template = { ...rest, env: {}, request: { ...config.request, extra_env: {} } };
  }

  /** Starts a spare when there is none alive. */
  refill(): void {
    if (this.closed || this.starting || (this.spare !== null && running(this.spare.child))) return;
    this.starting = true;
    void this.start().finally(() => (this.starting = false));
  }

  private async start(): Promise<void> {
    const template = this.template;
    const dirs = template !== undefined ? await this.makeDirs().catch(() => undefined) : undefined;
    const argv = [...this.child.argsPrefix, "run", "--config-on-stdin", "--json"];
    const child = this.closed ? undefined : startChild(this.child.command, argv, SPARE_CWD, this.env);
    if (child?.pid === undefined || child.stdin === null) {
      if (child !== undefined) void child.catch(() => {});
      if (dirs !== undefined) await removeDirs(dirs);
      return;
    }
    const spare: Spare = { child, ...(dirs !== undefined ? { dirs } : {}), claimed: false };
    this.spare = spare;
    child.nodeChildProcess.once("exit", () => {
      if (this.spare === spare) this.spare = null;
      if (spare.dirs !== undefined && !spare.claimed) void this.removeSpare(spare.dirs);
    });
    if (dirs === undefined || template === undefined) return;
    child.stdin.on("error", () => {});
    const warm: SpareWarmth = {
      warm: { config: { ...template, run_id: dirs.id, work_dir: join(dirs.work, AGENT_WORK_DIR) }, run_dir: dirs.run, spare_of: ownIdentity() },
    };
    child.stdin.write(`${JSON.stringify(warm)}\n`);
  }

  private async makeDirs(): Promise<SpareDirs> {
    const { configDir, runsDir, deployment } = this.warmth!;
    const id = `spare-${randomUUID()}`;
    const dirs = { id, run: join(configDir, `${SPARE_RUN_DIR}${id.slice("spare-".length)}`), work: join(runsDir, id) };
    await ensureRunsDir(runsDir);
    try {
      for (const dir of [dirs.run, dirs.work]) {
        await mkdir(dir, { mode: 0o700 });
        await markDeployment(dir, deployment);
        await writeFile(join(dir, SPARE_OF_FILE), `${ownIdentity()}\n`, { mode: 0o600, flag: "wx" });
      }
      await mkdir(join(dirs.work, AGENT_WORK_DIR), { mode: 0o700 });
    } catch (error) {
      await removeDirs(dirs);
      throw error;
    }
    return dirs;
  }

  /**
   * For a container run of one phase, `runId`: a spare with a warm container, its directories made the run's. Null when
   * there is none alive (the run takes a plain spare, or starts a child of its own).
   */
  async claim(runId: string): Promise<ClaimedSpare | null> {
    const spare = this.spare;
    const dirs = spare?.dirs;
    if (spare === null || dirs === undefined || !running(spare.child) || spare.child.stdin === null) return null;
    this.spare = null;
    spare.claimed = true;
    setTimeout(() => this.refill(), REFILL_AFTER_TAKE_MS).unref();
    const { configDir, runsDir } = this.warmth!;
    const runDir = runDirPath(configDir, runId);
    const workDir = retainedDir(runsDir, runId);
    const end = () => endSpare(spare.child);
    try {
      // Never onto something already there (a rename would replace an empty directory): the run then fails as createRunDir does.
      for (const path of [runDir, workDir]) if (await exists(path)) throw new Error(`${path} exists`);
      await rename(dirs.run, runDir);
      await rename(dirs.work, workDir);
      await Promise.all([rm(join(runDir, SPARE_OF_FILE), { force: true }), rm(join(workDir, SPARE_OF_FILE), { force: true })]);
    } catch {
      await end();
      await removeDirs(dirs);
      return null;
    }
    let handed = false;
    return {
      runDir,
      hand: (handoff) => {
        const child = running(spare.child) ? handOver(spare.child, handoff) : null;
        handed = child !== null;
        return child;
      },
      release: async () => {
        if (!handed) await end();
      },
    };
  }

  /** The spare, handed its run; null when there is none alive (the run starts a child of its own). */
  take(handoff: SpareHandoff): StartedChild | null {
    const spare = this.spare;
    if (spare === null || !running(spare.child) || spare.child.stdin === null) return null;
    this.spare = null;
    setTimeout(() => this.refill(), REFILL_AFTER_TAKE_MS).unref();
    return handOver(spare.child, handoff);
  }

  /** Ends the spare (its group, by its pid) and starts no other. */
  async close(): Promise<void> {
    this.closed = true;
    const spare = this.spare;
    this.spare = null;
    if (spare === null) return;
    await endSpare(spare.child);
    if (spare.dirs !== undefined) await this.removeSpare(spare.dirs);
  }

  /**
   * What a spare no run claimed leaves: its directories, and its container should it have been starting as the spare
   * ended (one that had started ends by itself with the spare's exec channel).
   */
  private async removeSpare(dirs: SpareDirs): Promise<void> {
    await removeDirs(dirs);
    await this.warmth?.removeContainers?.(dirs.id).catch(() => {});
  }
}

/** The run's line to the spare; null when it has no stdin. */
function handOver(child: StartedChild, handoff: SpareHandoff): StartedChild | null {
  if (child.stdin === null) return null;
  // Should it die this instant, supervise() sees it exit: the write must not throw on the way.
  child.stdin.on("error", () => {});
  child.stdin.write(`${JSON.stringify(handoff)}\n`);
  return child;
}

/** Ends a spare child and its group, by its pid; its streams are let go, not drained (nobody reads a spare's output). */
async function endSpare(child: StartedChild): Promise<void> {
  if (child.pid === undefined) return;
  const exited = running(child) ? new Promise((resolve) => child.nodeChildProcess.once("exit", resolve)) : Promise.resolve();
  if (groupAlive(child.pid)) await terminateTree(child.pid, 0);
  await exited;
  child.all?.destroy();
  child.stdin?.destroy();
  void child.catch(() => {});
}

async function exists(path: string): Promise<boolean> {
  return lstat(path).then(
    () => true,
    () => false,
  );
}

async function removeDirs(dirs: SpareDirs): Promise<void> {
  await Promise.all([rm(dirs.run, { recursive: true, force: true }), rm(dirs.work, { recursive: true, force: true })]);
}

/**
 * At a worker's start: the spare directories of this deployment's workers that are gone (a worker killed with its
 * spare). Another deployment's, and a live worker's, are left alone. Returns how many went.
 */
export async function sweepSpareDirs(warmth: SpareHome): Promise<number> {
  let swept = 0;
  for (const [parent, prefix] of [
    [warmth.configDir, SPARE_RUN_DIR],
    [warmth.runsDir, SPARE_WORK_DIR],
  ] as const) {
    const names = await readdir(parent).catch(() => [] as string[]);
    for (const name of names.filter((n) => n.startsWith(prefix))) {
      const dir = join(parent, name);
      const read = (file: string) => readFile(join(dir, file), "utf8").catch(() => "");
      const [mark, owner] = await Promise.all([read(DEPLOYMENT_FILE), read(SPARE_OF_FILE)]);
      if (mark.trimEnd() !== warmth.deployment || identityLives(owner) !== false) continue;
      await rm(dir, { recursive: true, force: true });
      swept += 1;
    }
  }
  return swept;
}
