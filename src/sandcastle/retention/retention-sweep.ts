// Expiry of retained run workspaces: the `reap` of one run when its delayed job comes due, and the sweep at a
// worker's start (the backstop for reaps a stopped Redis or worker missed). Neither ever pulls a workspace out
// from under an open sandbox: an open one waits. Both touch only their own deployment's directories: RUNS_DIR
// may be shared with other deployments (ADR 0044).
import { existsSync } from "node:fs";
import { outlivedAnyRun, type Deployment } from "../deployment.js";
import { expiresAt, keeperLives, readMeta, removeRetained, retainedDir, runDirNames, type RetainedMeta } from "./retained-runs.js";
import type { SandboxLiveness } from "../containers/sandbox-shell.js";

/** A reap that meets an open sandbox looks again this much later. */
export const OPEN_SANDBOX_RETRY_MS = 15 * 60_000;

export type ReapOutcome = { readonly removed: boolean; readonly note: string | null } | { readonly retryAt: number; readonly why: string };

export async function reapRetained(
  runsDir: string,
  runId: string,
  windowMs: number,
  liveness: SandboxLiveness,
  deployment: Deployment,
  now = Date.now(),
): Promise<ReapOutcome> {
  const dir = retainedDir(runsDir, runId);
  if (!existsSync(dir)) return { removed: false, note: "already gone" };
  // A reap job for another's run (one an older version's sweep scheduled) removes nothing.
  const owner = await deployment.ownerOf(dir, runId);
  if (owner !== "ours")
    return {
      removed: false,
      note: owner === "another" ? "another deployment's workspace: left to it" : "a workspace of no run this deployment knows: left alone",
    };
  const meta = await readMeta(runsDir, runId);
  // A pin (or a longer window) moved the expiry after this job was set: wait for the new one.
  if (meta !== null && expiresAt(meta, windowMs) > now) return { retryAt: expiresAt(meta, windowMs), why: "its expiry is later now" };
  if ((await liveness.openSandboxes()).has(runId)) return { retryAt: now + OPEN_SANDBOX_RETRY_MS, why: "its sandbox is open" };
  await removeRetained(runsDir, runId);
  return { removed: true, note: null };
}

export interface SweepInput {
  readonly runsDir: string;
  /** Whose directories the sweep may touch. */
  readonly deployment: Deployment;
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
  /** Retained, unmarked (made before deployments were marked) and unknown to this deployment's Redis: left alone. */
  readonly unowned: string[];
}

export async function sweepRetained(input: SweepInput): Promise<SweepOutcome> {
  const names = await runDirNames(input.runsDir);
  const out: SweepOutcome = { removed: [], open: [], kept: [], unowned: [] };
  if (names.length === 0) return out;
  const now = input.now ?? Date.now();
  const [open, active] = await Promise.all([input.liveness.openSandboxes(), input.activeRunIds()]);
  for (const runId of names) {
    const dir = retainedDir(input.runsDir, runId);
    const owner = await input.deployment.ownerOf(dir, runId);
    if (owner === "another") continue;
    const meta = await readMeta(input.runsDir, runId);
    if (owner === "unknown") {
      // Whoever made it: a run's unfinished directory this old belongs to no live run.
      if (meta === null && (await outlivedAnyRun(dir, now))) {
        await removeRetained(input.runsDir, runId);
        out.removed.push(runId);
      } else if (meta !== null) out.unowned.push(runId);
      continue;
    }
    // Ours but maybe unmarked (made before marks; its job is in our Redis): marked now, so listings find it.
    await input.deployment.mark(dir).catch(() => {});
    // Still running, or ended and being kept after its result (its keeper's lock): nothing to sweep yet.
    if (meta === null && (active.has(runId) || (await keeperLives(dir, now)))) continue;
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
