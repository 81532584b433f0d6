// Git worktrees under <repo_workdir>/.sandcastle/worktrees/, one per branch an agent works on.
//
// Why not let run() create them: Sandcastle 0.12.0 prunes "stale" worktrees before creating one
// (`git worktree prune`, then rm -rf of every directory under .sandcastle/worktrees/ that
// `git worktree list` does not show). A directory another caller is creating at that moment is
// not listed yet and gets deleted (upstream #849; #642 is the related false-collision report).
// So the child creates and removes worktrees itself with createWorktree()/close(), holding an
// exclusive lock file in the repo's git common dir for those few milliseconds, and runs agents
// with worktree.run(), which neither prunes nor creates. Parallel implementers of one run and
// concurrent children on the same repo_workdir (different branches) are thereby serialized only
// while a worktree is created or removed; agents still run concurrently.
//
// Each branch is also claimed for as long as its worktree is open: Sandcastle would hand a second
// caller on the same branch the same worktree, two agents in one checkout. A second child on a
// branch that is in use fails at once instead.
import { createHash } from "node:crypto";
import { join } from "node:path";
import type { Worktree } from "@ai-hero/sandcastle";
import { tryLock, unlock } from "./lock-files.js";
import { RunFailure } from "./run-failure.js";

type Sandcastle = typeof import("@ai-hero/sandcastle");

const CREATE_LOCK = "sandcastle-queue-worktrees.lock";
const CREATE_LOCK_WAIT_MS = 60_000;
/** Creating or removing a worktree takes milliseconds: an older lock is a leftover. */
const CREATE_LOCK_STALE_MS = 120_000;

export interface WorktreeSite {
  readonly sc: Sandcastle;
  readonly repo: string;
  readonly commonDir: string;
  readonly signal: AbortSignal;
}

async function withCreateLock<T>(commonDir: string, signal: AbortSignal | undefined, work: () => Promise<T>): Promise<T> {
  const path = join(commonDir, CREATE_LOCK);
  const deadline = Date.now() + CREATE_LOCK_WAIT_MS;
  while (tryLock(path, "worktree create/remove", { staleAfterMs: CREATE_LOCK_STALE_MS }) !== undefined) {
    signal?.throwIfAborted();
    if (Date.now() > deadline) {
      throw new RunFailure("agent_failed", `timed out after ${CREATE_LOCK_WAIT_MS / 1000}s waiting for the worktree lock ${path}`);
    }
    await new Promise((r) => setTimeout(r, 20 + Math.random() * 30));
  }
  try {
    return await work();
  } finally {
    unlock(path);
  }
}

function claimPath(commonDir: string, branch: string): string {
  const digest = createHash("sha256").update(branch).digest("hex").slice(0, 20);
  return join(commonDir, `sandcastle-queue-branch-${digest}.lock`);
}

/**
 * A worktree on `branch`: created from `baseBranch` (default HEAD) when the branch does not exist;
 * an existing Sandcastle worktree of that branch (kept by an earlier run) is reused as it is.
 */
export async function openWorktree(site: WorktreeSite, branch: string, baseBranch?: string): Promise<Worktree> {
  const claim = claimPath(site.commonDir, branch);
  const holder = tryLock(claim, branch);
  if (holder !== undefined) {
    throw new RunFailure("agent_failed", `branch ${branch} is in use by another run in this repository (pid ${holder})`);
  }
  try {
    return await withCreateLock(site.commonDir, site.signal, () =>
      site.sc.createWorktree({
        cwd: site.repo,
        branchStrategy: baseBranch === undefined ? { type: "branch", branch } : { type: "branch", branch, baseBranch },
      }),
    );
  } catch (error) {
    unlock(claim);
    throw error;
  }
}

/**
 * Removes the worktree when clean; a worktree with uncommitted changes is kept on disk and its
 * path returned (the branch and its commits stay either way). Releases the branch claim.
 */
export async function closeWorktree(site: Pick<WorktreeSite, "commonDir">, worktree: Worktree): Promise<string | undefined> {
  try {
    const result = await withCreateLock(site.commonDir, undefined, () => worktree.close());
    return result.preservedWorktreePath;
  } finally {
    unlock(claimPath(site.commonDir, worktree.branch));
  }
}
