// Retained run workspaces: RUNS_DIR/<run_id>/ (0700) holds what an operator needs to re-open a finished run
// — workspace/ (a standalone clone of the worktree as the agent left it), job/ (request, prompt, redacted
// session log, result) and retained.json (who ran it, with which image, when it ended, any pin). A run
// expires at its end + SANDBOX_RETENTION_HOURS as set now, or at its pin when that is later: a pin is a
// timestamp, so it survives a change of the window, and it still ends.
import { lstat, mkdir, readdir, readFile, rename, rm, writeFile, chmod } from "node:fs/promises";
import { join } from "node:path";
import { z } from "zod";
import { InvalidInputError } from "../invalid-input.js";
import { SandboxField } from "./contract.js";

/** A run id is the BullMQ job id `run-<uuid>`; nothing else ever becomes a path here. */
export const RunId = z.string().regex(/^run-[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/, "must be a run id: run-<uuid>");

export const META_FILE = "retained.json";
export const WORKSPACE_DIR = "workspace";
export const JOB_DIR = "job";

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

/** Every retained run (a directory with a valid retained.json), oldest end first. */
export async function listRetained(runsDir: string): Promise<RetainedRun[]> {
  const runs: RetainedRun[] = [];
  for (const runId of await runDirNames(runsDir)) {
    const meta = await readMeta(runsDir, runId).catch(() => null);
    if (meta === null) continue;
    const dir = retainedDir(runsDir, runId);
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
  const left = ms >= 2 * 86_400_000 ? `${Math.floor(ms / 86_400_000)}d left` : ms >= 3_600_000 ? `${Math.floor(ms / 3_600_000)}h left` : `${Math.max(1, Math.floor(ms / 60_000))}m left`;
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
