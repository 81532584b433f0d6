// One agent invocation ("phase") in a worktree: the prompt file of its kind, the run's {{KEY}}
// arguments, Sandcastle's stream events forwarded (text as the agent's lines, tool calls as records),
// the run's AbortSignal. Sandcastle's own log of each phase stays in the run's directory (phase-logs.ts).
// With an agent stream (agent-stream.ts), the agent's stdout bypasses Sandcastle.
import type { AgentProvider, Worktree, WorktreeRunResult } from "@ai-hero/sandcastle";
import type { ChildConfig } from "../contract.js";
import type { EventOrigin, EventPrinter } from "./events.js";
import type { AgentStream } from "./agent-stream.js";
import type { PhaseLogs } from "./phase-logs.js";
import { commonArgs, promptFile, referencedArgs, type PromptArgs, type PromptKind } from "./prompt.js";
import { messageOf } from "./run-failure.js";
import type { SandboxChoice } from "./sandboxes.js";
import type { WorktreeSite } from "./worktrees.js";

export interface RunContext {
  readonly config: ChildConfig;
  readonly agent: AgentProvider;
  readonly sandbox: SandboxChoice;
  readonly printer: EventPrinter;
  readonly logs: PhaseLogs;
  readonly site: WorktreeSite;
  /** The agent's stdout past Sandcastle (one phase at a time: single runs of the script agent on the host). */
  readonly stream?: AgentStream;
}

/** Agent iterations per phase: one agent session each; the worker's timeout bounds the whole run. */
const MAX_ITERATIONS = 1;

export async function runAgentPhase(
  ctx: RunContext,
  worktree: Worktree,
  origin: EventOrigin,
  kind: PromptKind,
  args: PromptArgs,
): Promise<WorktreeRunResult> {
  ctx.printer.phase(origin, "started", worktree.branch);
  let result: WorktreeRunResult;
  try {
    const file = promptFile(ctx.config.request.prompt_template_dir, kind);
    result = await worktree.run({
      agent: ctx.agent,
      sandbox: ctx.sandbox.provider(),
      promptFile: file,
      promptArgs: referencedArgs(file, { ...commonArgs(ctx.config), BRANCH: worktree.branch, ...args }),
      maxIterations: MAX_ITERATIONS,
      name: origin.implementer !== undefined ? `${origin.phase}-${origin.implementer}` : origin.phase,
      signal: ctx.site.signal,
      // Sandcastle sees none of a streamed agent's output: its idle timer must not end the run (the worker's timeout does).
      ...(ctx.stream ? { idleTimeoutSeconds: ctx.config.request.timeout_minutes * 60 + 60 } : {}),
      logging: {
        type: "file",
        path: ctx.logs.rawPath(origin),
        onAgentStreamEvent: (event) => ctx.printer.agentEvent(origin, event),
      },
    });
  } catch (error) {
    await ctx.stream?.close();
    ctx.printer.phase(origin, "failed", worktree.branch, ctx.site.signal.aborted ? "aborted" : messageOf(error));
    throw error;
  }
  await ctx.stream?.close();
  ctx.printer.phase(origin, "ok", worktree.branch, `${result.commits.length} commit(s)`);
  return result;
}
