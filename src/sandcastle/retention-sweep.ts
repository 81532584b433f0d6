// Expiry of retained run workspaces: the `reap` of one run when its delayed job comes due, and the sweep at a
// worker's start (the backstop for reaps a stopped Redis or worker missed). Neither ever pulls a workspace out
// from under an open sandbox: an open one waits.
import { existsSync } from "node:fs";
import { expiresAt, readMeta, removeRetained, retainedDir, runDirNames, type RetainedMeta } from "./retained-runs.js";
import type { SandboxLiveness } from "./sandbox-shell.js";

/** A reap that meets an open sandbox looks again this much later. */
export const OPEN_SANDBOX_RETRY_MS = 15 * 60_000;

export type ReapOutcome = { readonly removed: boolean; readonly note: string | null } | { readonly retryAt: number; readonly why: string };

export async function reapRetained(runsDir: string, runId: string, windowMs: number, liveness: SandboxLiveness, now = Date.now()): Promise<ReapOutcome> {
  if (!existsSync(retainedDir(runsDir, runId))) return { removed: false, note: "already gone" };
  const meta = await readMeta(runsDir, runId);
  // A pin (or a longer window) moved the expiry after this job was set: wait for the new one.
  if (meta !== null && expiresAt(meta, windowMs) > now) return { retryAt: expiresAt(meta, windowMs), why: "its expiry is later now" };
  if ((await liveness.openSandboxes()).has(runId)) return { retryAt: now + OPEN_SANDBOX_RETRY_MS, why: "its sandbox is open" };
  await removeRetained(runsDir, runId);
  return { removed: true, note: null };
}

export interface SweepInput {
  readonly runsDir: string;
  /** SANDBOX_RETENTION_HOURS in ms. */
  readonly windowMs: number;
  /** SANDBOX_RETENTION_HOURS = 0: everything retained goes, pinned or not. */
  readonly off: boolean;
  readonly liveness: SandboxLiveness;
  /** Runs still running: their directory (the log being written) has no retained.json yet. */
  readonly activeRunIds: () => Promise<ReadonlySet<string>>;
  readonly now?: number;
}

export interface SweepOutcome {
  readonly removed: string[];
  /** Skipped because a sandbox is open on them. */
  readonly open: string[];
  /** Still retained, with their expiry: the caller makes sure each has its reap job. */
  readonly kept: RetainedMeta[];
}

export async function sweepRetained(input: SweepInput): Promise<SweepOutcome> {
  const names = await runDirNames(input.runsDir);
  const out: SweepOutcome = { removed: [], open: [], kept: [] };
  if (names.length === 0) return out;
  const now = input.now ?? Date.now();
  const [open, active] = await Promise.all([input.liveness.openSandboxes(), input.activeRunIds()]);
  for (const runId of names) {
    const meta = await readMeta(input.runsDir, runId);
    if (meta === null && active.has(runId)) continue;
    if (meta !== null && !input.off && expiresAt(meta, input.windowMs) > now) {
      out.kept.push(meta);
      continue;
    }
    if (open.has(runId)) {
      out.open.push(runId);
      continue;
    }
    await removeRetained(input.runsDir, runId);
    out.removed.push(runId);
  }
  return out;
}
