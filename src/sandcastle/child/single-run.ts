// parallel_implementers = 1: one agent session on request.branch with prompt.md.
import { runAgentPhase, type RunContext } from "./agent-phase.js";
import { closeWorktree, openWorktree } from "./worktrees.js";

export interface FlowOutcome {
  readonly mergedBranch: string | null;
  readonly notes: string[];
}

export async function runSingle(ctx: RunContext): Promise<FlowOutcome> {
  const branch = ctx.config.request.branch;
  const notes: string[] = [];
  const worktree = await (ctx.worktree ?? openWorktree(ctx.site, branch));
  try {
    const result = await runAgentPhase(ctx, worktree, { phase: "run" }, "run", {});
    if (result.commits === 0) notes.push("the agent made no commit");
    if (result.dirty) notes.push("the agent left uncommitted changes");
  } finally {
    const preserved = await closeWorktree(ctx.site, worktree).catch(() => undefined);
    if (preserved !== undefined) notes.push(`worktree kept (uncommitted changes): ${preserved}`);
  }
  return { mergedBranch: null, notes };
}
