// Keeping a finished run's workspace (retained-runs.ts has the layout). The worker claims it once the run has ended,
// whatever its status, and copies it after the run's result is readable (ADR 0051): RUNS_DIR/<run_id>/workspace is a
// standalone repository of the run's branch as the host repository has it (checked, ADR 0033), made by the host's git
// from the host repository, with the agent's files as it left them on top (a container run's own repository, its .git
// dropped unread; a dry run's kept worktree, copied), beside the request, the prompt files, the run's redacted log
// lines (logSink, written while it ran) and its result. Agent session transcripts are deleted before it is retained;
// no secret value is ever written.
import { execFile } from "node:child_process";
import { createWriteStream, existsSync, statSync, type WriteStream } from "node:fs";
import { copyFile, cp, lstat, mkdir, readdir, rename, rm, writeFile } from "node:fs/promises";
import { join } from "node:path";
import { promisify } from "node:util";
import type { Logger } from "../../log.js";
import { AGENT_WORKSPACE, containerEngine, effectiveSandbox, type SandcastleRunRequest, type SandcastleRunResult } from "../contract.js";
import { SANDBOX_HOME } from "../containers/container-args.js";
import { makeRetainedRepository, repoGit } from "./retained-repository.js";
import { runsDirProblems } from "./runs-dir-guard.js";
import {
  AGENT_WORK_DIR, expiresAt, JOB_DIR, KEEP_LOCK, makeRunDirectory, META_FILE, readMeta, retainedDir, RunId, takeKeepLock, WORKSPACE_DIR, writeMeta,
  type RetainedMeta,
} from "./retained-runs.js";
import { entryPieces, type BatchSink } from "../../session-log/session-log.js";

const execFileAsync = promisify(execFile);

/** Where Sandcastle mounts a worktree in a run container: the path the sandbox gives it again. */
export const SANDBOX_WORKTREE_PATH = `${SANDBOX_HOME}/workspace`;
/** The retained log stops here (the session's stream keeps its own newest lines). */
const LOG_MAX_BYTES = 64 * 2 ** 20;
/** Where agents keep session transcripts, relative to their working directory: never retained. */
const TRANSCRIPT_PATHS = [".claude/projects", ".codex/sessions", ".pi/agent/sessions", ".local/share/opencode", ".sandcastle"];
const NEWLINE = Buffer.from("\n");
/** The sandbox's user when the repository is root's: a sandbox never runs as root. */
const FALLBACK_USER = { uid: 1000, gid: 1000 } as const;

export interface RunRetentionOptions {
  readonly runsDir: string;
  /** SANDBOX_RETENTION_HOURS in ms; 0 = off (nothing is retained). */
  readonly windowMs: number;
  /** SANDCASTLE_IMAGE: the image of a run whose request named none. */
  readonly defaultImage: string;
  /** The deployment's label, marked in each run directory it makes (ADR 0044). */
  readonly deployment: string;
  readonly log: Logger;
  /** queues/'s side: a kept run's reap job at its expiry, scheduled before its retained.json is written. */
  readonly scheduleReap?: (runId: string, at: number) => Promise<unknown>;
}

export interface Kept {
  readonly dir: string;
  readonly expiresAt: number;
}

export class RunRetention {
  private readonly logs = new Map<string, { stream: WriteStream; bytes: number; failed: boolean }>();

  constructor(private readonly opts: RunRetentionOptions) {}

  get enabled(): boolean {
    return this.opts.windowMs > 0;
  }

  /** Retention is for runs whose id is a run id (`run-<uuid>`, as enqueue makes them): nothing else becomes a path. */
  private retains(runId: string): boolean {
    return this.enabled && RunId.safeParse(runId).success;
  }

  /** The run's redacted lines into job/session.log as they are stored; the directory is made on the first line. */
  logSink(runId: string): BatchSink {
    if (!this.retains(runId)) return async () => {};
    return async (entries) => {
      let log = this.logs.get(runId);
      if (log === undefined) {
        const jobDir = join(await makeRunDirectory(this.opts.runsDir, runId, this.opts.deployment), JOB_DIR);
        await mkdir(jobDir, { recursive: true, mode: 0o700 });
        const stream = createWriteStream(join(jobDir, "session.log"), { flags: "a", mode: 0o600 });
        const opened: { stream: WriteStream; bytes: number; failed: boolean } = { stream, bytes: 0, failed: false };
        // A disk that refuses the copy (full, read-only) costs the retained log, never the run or the worker.
        stream.on("error", (err) => {
          if (!opened.failed) this.opts.log.warn({ run_id: runId, err: err.message }, "the retained copy of the run's log stops here");
          opened.failed = true;
        });
        log = opened;
        this.logs.set(runId, log);
      }
      if (log.failed || log.bytes >= LOG_MAX_BYTES) return;
      let room = true;
      for (const piece of [...entryPieces(entries), NEWLINE]) {
        log.bytes += piece.length;
        room = log.stream.write(piece);
      }
      // A disk slower than the run waits here, like Redis does: the child's output waits in its pipe, not in memory.
      if (!room) await drained(log.stream);
    };
  }

  /** Retains the run; null when nothing is (off, skipped, no branch to open). Never throws for a run's own state. */
  async keep(runId: string, request: SandcastleRunRequest, result: SandcastleRunResult): Promise<Kept | null> {
    const rest = await this.claim(runId, request, result);
    return rest === null ? null : rest();
  }

  /**
   * Keeping's first step, quick, taken before the run's result is readable: the run's directory claimed by this
   * process (a sweep leaves a directory whose keeper runs, retained-runs.ts). Returns the rest (the copy, its
   * repository, retained.json), which may finish after the result; null when nothing is kept.
   */
  async claim(runId: string, request: SandcastleRunRequest, result: SandcastleRunResult): Promise<(() => Promise<Kept | null>) | null> {
    await this.closeLog(runId);
    if (!RunId.safeParse(runId).success) return null;
    const dir = retainedDir(this.opts.runsDir, runId);
    // A run refused for reaching into RUNS_DIR keeps nothing: no copy is ever made out of another run's workspace.
    if (!this.retains(runId) || result.status === "skipped" || (await runsDirProblems(this.opts.runsDir, request)).length > 0) {
      await rm(dir, { recursive: true, force: true });
      return null;
    }
    try {
      await makeRunDirectory(this.opts.runsDir, runId, this.opts.deployment);
      // One keeper of a run at a time (a lost run's own worker and the one declaring it lost): the second leaves it.
      if (!(await takeKeepLock(dir))) return null;
    } catch (err) {
      this.opts.log.warn({ run_id: runId, err: (err as Error).message }, "could not retain the run's workspace");
      await rm(dir, { recursive: true, force: true });
      return null;
    }
    return () => this.copy(runId, request, result);
  }

  /** The claimed run's workspace, job files and retained.json; on any failure its directory goes, lock and all. */
  private async copy(runId: string, request: SandcastleRunRequest, result: SandcastleRunResult): Promise<Kept | null> {
    const dir = retainedDir(this.opts.runsDir, runId);
    const branch = result.branch || request.branch;
    const repo = request.repo_workdir;
    const head = await repoGit(repo, ["rev-parse", "--verify", "--quiet", `refs/heads/${branch}^{commit}`]).catch(() => null);
    if (head === null) {
      this.opts.log.info({ run_id: runId, branch }, "run not retained: its branch does not exist (nothing to re-open)");
      await rm(dir, { recursive: true, force: true });
      return null;
    }
    try {
      const workspace = join(dir, WORKSPACE_DIR);
      await rm(workspace, { recursive: true, force: true });
      // A container run left its agent's repository of the branch: its files are the workspace's, its .git is never read.
      const agentWorkspace = join(dir, AGENT_WORK_DIR, AGENT_WORKSPACE);
      const fromAgent = (await lstat(agentWorkspace).catch(() => null))?.isDirectory() === true;
      const worktree = join(repo, ".sandcastle", "worktrees", branch.replace(/\//g, "-"));
      const hostDirty = !fromAgent && existsSync(join(worktree, ".git"));
      if (fromAgent) {
        await rename(agentWorkspace, workspace);
        await rm(join(workspace, ".git"), { recursive: true, force: true });
      } else {
        await mkdir(workspace, { mode: 0o700 });
        // A dry run's dirty worktree: the agent's files as it left them.
        if (hostDirty)
          for (const name of await readdir(worktree))
            if (name !== ".git") await cp(join(worktree, name), join(workspace, name), { recursive: true, preserveTimestamps: true, verbatimSymlinks: true });
      }
      await rm(join(dir, AGENT_WORK_DIR), { recursive: true, force: true });
      // The workspace's repository is the host's making (retained-repository.ts): the run's own objects, not the history.
      await makeRetainedRepository({
        workspace,
        repo,
        branch,
        tip: head.stdout.trim(),
        commits: result.commits.map((c) => c.sha),
        filesInPlace: fromAgent || hostDirty,
      });
      const dirty = fromAgent || hostDirty;
      for (const p of TRANSCRIPT_PATHS) await rm(join(workspace, p), { recursive: true, force: true });
      await dropNestedGitDirs(workspace);
      const user = repositoryOwner(repo);
      if (process.getuid?.() === 0) await execFileAsync("chown", ["-R", "-h", `${user.uid}:${user.gid}`, "--", workspace], { timeout: 600_000 });

      const jobDir = join(dir, JOB_DIR);
      await mkdir(join(jobDir, "prompt"), { recursive: true, mode: 0o700 });
      await writeFile(join(jobDir, "request.json"), `${JSON.stringify(request, null, 2)}\n`, { mode: 0o600 });
      await writeFile(join(jobDir, "result.json"), `${JSON.stringify(result, null, 2)}\n`, { mode: 0o600 });
      for (const name of await readdir(request.prompt_template_dir).catch(() => [] as string[])) {
        const from = join(request.prompt_template_dir, name);
        if (name.endsWith(".md") && statSync(from, { throwIfNoEntry: false })?.isFile()) await copyFile(from, join(jobDir, "prompt", name));
      }
      // The sandbox's user reads /job: readable by all inside the 0700 run directory.
      await execFileAsync("chmod", ["-R", "a+rX", "--", jobDir]);

      const now = Date.now();
      const previous = await readMeta(this.opts.runsDir, runId);
      const sandbox = effectiveSandbox(request);
      const meta: RetainedMeta = {
        run_id: runId,
        session_id: request.session_id,
        branch,
        status: result.status,
        provider: sandbox,
        image: request.image ?? this.opts.defaultImage,
        worktree_path: SANDBOX_WORKTREE_PATH,
        user,
        ended_at: new Date(now).toISOString(),
        pinned_until: previous?.pinned_until ?? null,
      };
      // Its reap first: whoever sees the run retained sees its expiry scheduled (a crash between leaves a reap of nothing).
      const expiry = expiresAt(meta, this.opts.windowMs);
      await this.opts.scheduleReap?.(runId, expiry).catch((err: Error) => {
        this.opts.log.warn({ run_id: runId, err: err.message }, "could not schedule the retained workspace's reap; the next worker start will");
      });
      await writeMeta(this.opts.runsDir, meta);
      await rm(join(dir, KEEP_LOCK), { force: true });
      this.opts.log.info({ run_id: runId, dir, engine: containerEngine(sandbox) ?? null, dirty }, "run workspace retained");
      return { dir, expiresAt: expiry };
    } catch (err) {
      this.opts.log.warn({ run_id: runId, err: (err as Error).message }, "could not retain the run's workspace");
      await rm(dir, { recursive: true, force: true });
      return null;
    }
  }

  /**
   * A run this worker declared lost (its own worker died): kept like any ended run when that worker wrote the run's
   * log lines into this RUNS_DIR (same machine or disk: its worktree is here too) and nothing has kept it yet.
   */
  async keepLost(runId: string, request: SandcastleRunRequest, result: SandcastleRunResult): Promise<Kept | null> {
    if (!this.retains(runId)) return null;
    const dir = retainedDir(this.opts.runsDir, runId);
    if (!existsSync(dir) || existsSync(join(dir, META_FILE))) {
      this.opts.log.info(
        { run_id: runId },
        existsSync(dir)
          ? "lost run already retained by its own worker"
          : "lost run not retained: its worker wrote nothing of it into this RUNS_DIR (it ran on another machine, or printed nothing)",
      );
      return null;
    }
    return this.keep(runId, request, result);
  }

  /** A run that ended without a result (its processor threw): whatever was started for it goes. */
  async discard(runId: string): Promise<void> {
    await this.closeLog(runId);
    if (!RunId.safeParse(runId).success) return;
    if (!existsSync(join(retainedDir(this.opts.runsDir, runId), META_FILE))) await rm(retainedDir(this.opts.runsDir, runId), { recursive: true, force: true });
  }

  private async closeLog(runId: string): Promise<void> {
    const log = this.logs.get(runId);
    this.logs.delete(runId);
    if (log !== undefined) await new Promise<void>((resolve) => log.stream.end(() => resolve()));
  }
}

/** The stream took what it buffered (or failed: the run's log on disk is best-effort). */
function drained(stream: WriteStream): Promise<void> {
  return new Promise((resolve) => {
    const done = () => {
      stream.off("drain", done);
      stream.off("error", done);
      resolve();
    };
    stream.once("drain", done);
    stream.once("error", done);
  });
}

/**
 * Removes every `.git` below the workspace's own: an agent's nested repository is not the branch's content,
 * and a git run in the workspace (`git status` over a submodule) would run what its config says.
 */
async function dropNestedGitDirs(workspace: string): Promise<void> {
  const walk = async (dir: string): Promise<void> => {
    for (const entry of await readdir(dir, { withFileTypes: true }).catch(() => [])) {
      const path = join(dir, entry.name);
      if (entry.name === ".git") await rm(path, { recursive: true, force: true });
      else if (entry.isDirectory()) await walk(path);
    }
  };
  for (const entry of await readdir(workspace, { withFileTypes: true }))
    if (entry.name !== ".git" && entry.isDirectory()) await walk(join(workspace, entry.name));
}

/** The owner of the repository's git dir (as the run's containers, ADR 0009), never root. */
function repositoryOwner(repo: string): RetainedMeta["user"] {
  try {
    const st = statSync(join(repo, ".git"));
    return st.uid === 0 ? { ...FALLBACK_USER } : { uid: st.uid, gid: st.gid };
  } catch {
    return { ...FALLBACK_USER };
  }
}
