// parallel_implementers = N > 1: the shape of Sandcastle's parallel-planner-with-review template.
//   1. plan       plan-prompt.md on request.branch; its output (the inside of <plan>…</plan> when
//                 present) becomes {{PLAN}}, and entry i of a JSON plan becomes implementer i's {{TASK}}
//   2. implement  N implementers at once, implementer i on branch `<branch>-impl-<i>` created from
//                 request.branch, implement-prompt.md (prompt.md when absent)
//      review     in the same worktree, after an implementer that made commits: review-prompt.md
//   3. merge      merge-prompt.md on request.branch with {{BRANCHES}} = the implementer branches
//                 that have commits; the child then checks each one really is merged
// merged_branch = request.branch when every step succeeded and something was merged. Merged
// implementer branches are deleted afterwards (their commits live on request.branch).
// A failed implementer fails the run before the merge (no partial merges).
import type { Worktree } from "@ai-hero/sandcastle";
import { runAgentPhase, type RunContext } from "./agent-phase.js";
import { extractPlan, taskFor } from "./prompt.js";
import { branchRef, deleteBranch, isAncestor } from "./repository.js";
import { RunFailure, messageOf } from "./run-failure.js";
import type { FlowOutcome } from "./single-run.js";
import { closeWorktree, openWorktree } from "./worktrees.js";

interface ImplementerOutcome {
  readonly index: number;
  readonly branch: string;
  readonly commits: number;
  readonly kept: string | undefined;
}

export function implementerBranch(branch: string, index: number): string {
  return `${branch}-impl-${index}`;
}

async function runImplementer(ctx: RunContext, index: number, plan: string): Promise<ImplementerOutcome> {
  const runBranch = ctx.config.request.branch;
  const branch = implementerBranch(runBranch, index);
  const worktree: Worktree = await openWorktree(ctx.site, branch, runBranch);
  let commits = 0;
  let kept: string | undefined;
  try {
    const args = { IMPL_INDEX: index, PLAN: plan, TASK: taskFor(plan, index) };
    const implemented = await runAgentPhase(ctx, worktree, { phase: "implement", implementer: index }, "implement", args);
    commits = implemented.commits;
    if (commits > 0) {
      const reviewed = await runAgentPhase(ctx, worktree, { phase: "review", implementer: index }, "review", args);
      commits += reviewed.commits;
    }
  } finally {
    kept = await closeWorktree(ctx.site, worktree).catch(() => undefined);
  }
  return { index, branch, commits, kept };
}

export async function runParallelPlanner(ctx: RunContext): Promise<FlowOutcome> {
  const { branch, parallel_implementers: count } = ctx.config.request;
  const repo = ctx.site.repo;
  const notes: string[] = [];
  const main = await openWorktree(ctx.site, branch);
  try {
    const planned = await runAgentPhase(ctx, main, { phase: "plan" }, "plan", {});
    const plan = extractPlan(planned.stdout);

    const indexes = Array.from({ length: count }, (_, i) => i + 1);
    const settled = await Promise.allSettled(indexes.map((i) => runImplementer(ctx, i, plan)));
    ctx.site.signal.throwIfAborted();

    const outcomes: ImplementerOutcome[] = [];
    const failures: string[] = [];
    settled.forEach((s, i) => {
      if (s.status === "fulfilled") outcomes.push(s.value);
      else failures.push(`implementer ${i + 1} (${implementerBranch(branch, i + 1)}): ${messageOf(s.reason)}`);
    });
    for (const o of outcomes) if (o.kept !== undefined) notes.push(`worktree kept (uncommitted changes): ${o.kept}`);
    if (failures.length > 0) throw new RunFailure("agent_failed", failures.join("; "));

    const withCommits = outcomes.filter((o) => o.commits > 0);
    if (withCommits.length === 0) {
      notes.push("no implementer made a commit; nothing to merge");
      return { mergedBranch: null, notes };
    }

    const branches = withCommits.map((o) => o.branch);
    await runAgentPhase(ctx, main, { phase: "merge" }, "merge", {
      PLAN: plan,
      BRANCHES: branches.map((b) => `- ${b}`).join("\n"),
      BRANCH_LIST: branches.join(" "),
    });

    const unmerged: string[] = [];
    for (const b of branches) if (!(await isAncestor(repo, branchRef(b), branchRef(branch)))) unmerged.push(b);
    if (unmerged.length > 0) {
      throw new RunFailure("agent_failed", `the merge agent did not merge ${unmerged.join(", ")} into ${branch}`);
    }
    for (const o of withCommits) if (o.kept === undefined) await deleteBranch(repo, o.branch);
    for (const o of outcomes) if (o.commits === 0 && o.kept === undefined) await deleteBranch(repo, o.branch);
    return { mergedBranch: branch, notes };
  } finally {
    const kept = await closeWorktree(ctx.site, main).catch(() => undefined);
    if (kept !== undefined) notes.push(`worktree kept (uncommitted changes): ${kept}`);
  }
}
