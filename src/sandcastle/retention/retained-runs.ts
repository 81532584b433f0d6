// Retained run workspaces: RUNS_DIR/<run_id>/ (0700) holds what an operator needs to re-open a finished run
// — workspace/ (a standalone clone of the worktree as the agent left it), job/ (request, prompt, redacted
// session log, result), retained.json (who ran it, with which image, when it ended, any pin) and `deployment`
// (which deployment made it: only that one's workers and commands touch it, deployment.ts). A run
// expires at its end + SANDBOX_RETENTION_HOURS as set now, or at its pin when that is later: a pin is a
// timestamp, so it survives a change of the window, and it still ends.
import { lstat, mkdir, open, readdir, readFile, rename, rm, stat, writeFile, chmod } from "node:fs/promises";
import { join } from "node:path";
import { z } from "zod";
import { InvalidInputError } from "../../invalid-input.js";
import { identityLives, ownIdentity } from "../../process-identity.js";
import { SandboxField } from "../contract.js";
import { markDeployment, type Deployment } from "../deployment.js";

/** A run id is the BullMQ job id `run-<uuid>`; nothing else ever becomes a path here. */
export const RunId = z.string().regex(/^run-[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/, "must be a run id: run-<uuid>");

export const META_FILE = "retained.json";
export const WORKSPACE_DIR = "workspace";
export const JOB_DIR = "job";
/** While a docker/podman run runs: the agent's own repositories and their hand-offs (ADR 0033); never retained as such. */
export const AGENT_WORK_DIR = "agent";
/** Held by the process keeping a run (its identity, process-identity.ts) until retained.json is there. */
export const KEEP_LOCK = ".keeping";
/** A keeper on another machine cannot be asked whether it runs: its lock counts as held this long (a keep takes seconds). */
const FOREIGN_KEEPER_MS = 3_600_000;
/** How long a reader waits for a run still being kept (its copy takes seconds; a huge one, longer). */
const KEEP_WAIT_MS = 120_000;

export const RetainedMeta = z
  .object({
    run_id: RunId,
    session_id: z.string(),
    branch: z.string(),
    status: z.string(),
    /** The sandbox the run used (docker, podman, noSandbox, custom:<name>). */
    provider: SandboxField,
    /** The image a sandbox opens: the run's own, or the one a container run would have used. */
    image: z.string(),
    /** Where the run's agent saw its worktree inside a run container; the sandbox mounts it there. */
    worktree_path: z.string(),
    /** The repository's owner: the sandbox's user, as the run's containers' (never root). */
    user: z.object({ uid: z.number().int().positive(), gid: z.number().int().nonnegative() }).strict(),
    ended_at: z.iso.datetime(),
    /** Set by `sandbox pin`: now + SANDBOX_PIN_DAYS at the time of the pin. */
    pinned_until: z.iso.datetime().nullable(),
  })
  .strict();
export type RetainedMeta = z.infer<typeof RetainedMeta>;

export interface RetainedRun {
  readonly meta: RetainedMeta;
  readonly dir: string;
  readonly bytes: number;
}

export function parseRunId(input: unknown): string {
  const parsed = RunId.safeParse(input);
  if (!parsed.success) throw new InvalidInputError("run id", `${JSON.stringify(input).slice(0, 80)} is not one: a run id is run-<uuid>`);
  return parsed.data;
}

export function retainedDir(runsDir: string, runId: string): string {
  return join(runsDir, parseRunId(runId));
}

/** RUNS_DIR itself, 0700 whatever the umask: it holds issue text and agent-written code. */
export async function ensureRunsDir(runsDir: string): Promise<void> {
  await mkdir(runsDir, { recursive: true, mode: 0o700 });
  await chmod(runsDir, 0o700);
}

/** RUNS_DIR/<run_id>/ (0700), marked with the deployment that runs it (ADR 0044) before anything of the run goes in. */
export async function makeRunDirectory(runsDir: string, runId: string, deployment: string): Promise<string> {
  await ensureRunsDir(runsDir);
  const dir = retainedDir(runsDir, runId);
  await mkdir(dir, { recursive: true, mode: 0o700 });
  await chmod(dir, 0o700);
  await markDeployment(dir, deployment);
  return dir;
}

export async function readMeta(runsDir: string, runId: string): Promise<RetainedMeta | null> {
  let text: string;
  try {
    text = await readFile(join(retainedDir(runsDir, runId), META_FILE), "utf8");
  } catch {
    return null;
  }
  let json: unknown;
  try {
    json = JSON.parse(text);
  } catch {
    return null; // cut short (a crash mid-write): the directory counts as unfinished
  }
  const parsed = RetainedMeta.safeParse(json);
  return parsed.success ? parsed.data : null;
}

/** Written last and renamed into place: a directory with this file is retained, whole. */
export async function writeMeta(runsDir: string, meta: RetainedMeta): Promise<void> {
  const dir = retainedDir(runsDir, meta.run_id);
  const tmp = join(dir, `${META_FILE}.tmp`);
  await writeFile(tmp, `${JSON.stringify(RetainedMeta.parse(meta), null, 2)}\n`, { mode: 0o600 });
  await rename(tmp, join(dir, META_FILE));
}

/** Claims a run's directory for its keeper (exclusive create): false when another holds it, live or not. */
export async function takeKeepLock(dir: string): Promise<boolean> {
  try {
    const file = await open(join(dir, KEEP_LOCK), "wx", 0o600);
    await file.writeFile(`${ownIdentity()}\n`);
    await file.close();
    return true;
  } catch (err) {
    if ((err as NodeJS.ErrnoException).code === "EEXIST") return false;
    throw err;
  }
}

/** Whether a process still keeps the run in `dir`: its lock is there and its keeper runs (or cannot be asked, and the lock is fresh). */
export async function keeperLives(dir: string, now = Date.now()): Promise<boolean> {
  const path = join(dir, KEEP_LOCK);
  const identity = await readFile(path, "utf8").catch(() => null);
  if (identity === null) return false;
  const lives = identityLives(identity);
  if (lives !== undefined) return lives;
  const st = await stat(path).catch(() => null);
  return st !== null && now - st.mtimeMs < FOREIGN_KEEPER_MS;
}

/**
 * The run's retained.json, waiting while its keeper still works on it: a run's result is readable before its workspace
 * is kept (ADR 0051), so an operator who opens it at once waits the copy's few seconds instead of being told it is not there.
 */
export async function readMetaWhenKept(runsDir: string, runId: string, timeoutMs = KEEP_WAIT_MS): Promise<RetainedMeta | null> {
  const dir = retainedDir(runsDir, runId);
  const deadline = Date.now() + timeoutMs;
  for (;;) {
    const meta = await readMeta(runsDir, runId);
    if (meta !== null || Date.now() >= deadline) return meta;
    // Its keeper may have finished between the two reads.
    if (!(await keeperLives(dir))) return readMeta(runsDir, runId);
    await new Promise((resolve) => setTimeout(resolve, 100));
  }
}

/** Run ids of the directories in RUNS_DIR that are named like a run (anything else is never touched). */
export async function runDirNames(runsDir: string): Promise<string[]> {
  try {
    return (await readdir(runsDir)).filter((name) => RunId.safeParse(name).success);
  } catch {
    return [];
  }
}

/** Bytes on disk of a tree, symlinks counted as themselves (never followed). */
export async function treeBytes(path: string): Promise<number> {
  let total = 0;
  const walk = async (p: string): Promise<void> => {
    const st = await lstat(p).catch(() => null);
    if (st === null) return;
    total += st.size;
    if (st.isDirectory()) for (const name of await readdir(p).catch(() => [] as string[])) await walk(join(p, name));
  };
  await walk(path);
  return total;
}

/**
 * Every retained run of the deployment (a directory of its own with a valid retained.json), oldest end first; one still
 * being kept is waited for up to `keptWithinMs`.
 */
export async function listRetained(runsDir: string, deployment: Deployment, keptWithinMs = KEEP_WAIT_MS): Promise<RetainedRun[]> {
  const runs: RetainedRun[] = [];
  for (const runId of await runDirNames(runsDir)) {
    const dir = retainedDir(runsDir, runId);
    if ((await deployment.ownerOf(dir, runId)) !== "ours") continue;
    const meta = await readMetaWhenKept(runsDir, runId, keptWithinMs).catch(() => null);
    if (meta === null) continue;
    runs.push({ meta, dir, bytes: await treeBytes(dir) });
  }
  return runs.sort((a, b) => a.meta.ended_at.localeCompare(b.meta.ended_at));
}

export async function removeRetained(runsDir: string, runId: string): Promise<void> {
  await rm(retainedDir(runsDir, runId), { recursive: true, force: true });
}

/** A pin: now + SANDBOX_PIN_DAYS (a pin never shortens an earlier one). */
export function pinned(meta: RetainedMeta, pinDays: number, now: number): RetainedMeta {
  const until = Math.max(meta.pinned_until !== null ? Date.parse(meta.pinned_until) : 0, now + pinDays * 86_400_000);
  return { ...meta, pinned_until: new Date(until).toISOString() };
}

/** When the run expires under the window in force (ms; SANDBOX_RETENTION_HOURS): its end + window, or its pin when later. */
export function expiresAt(meta: RetainedMeta, windowMs: number): number {
  const byWindow = Date.parse(meta.ended_at) + windowMs;
  return meta.pinned_until !== null ? Math.max(byWindow, Date.parse(meta.pinned_until)) : byWindow;
}

/** `19h left`, `pinned, 6d left`, `expired`: what `sandbox list` says of a closed sandbox. */
export function timeLeft(meta: RetainedMeta, windowMs: number, now: number): string {
  const ms = expiresAt(meta, windowMs) - now;
  if (ms <= 0) return "expired";
  const left =
    ms >= 2 * 86_400_000
      ? `${Math.floor(ms / 86_400_000)}d left`
      : ms >= 3_600_000
        ? `${Math.floor(ms / 3_600_000)}h left`
        : `${Math.max(1, Math.floor(ms / 60_000))}m left`;
  const byPin = meta.pinned_until !== null && Date.parse(meta.pinned_until) > Date.parse(meta.ended_at) + windowMs;
  return byPin ? `pinned, ${left}` : left;
}

export function formatBytes(bytes: number): string {
  const units = ["B", "KiB", "MiB", "GiB", "TiB"];
  let n = bytes;
  let u = 0;
  while (n >= 1024 && u < units.length - 1) {
    n /= 1024;
    u += 1;
  }
  return u === 0 ? `${n} B` : `${n.toFixed(1)} ${units[u]}`;
}
