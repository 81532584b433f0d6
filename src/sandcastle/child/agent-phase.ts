// One agent invocation ("phase") in a worktree: the prompt file of its kind, the run's {{KEY}}
// arguments, Sandcastle's stream events forwarded (text as the agent's lines, tool calls as records),
// the run's AbortSignal. Sandcastle's own log of each phase stays in the run's directory (phase-logs.ts).
// With an agent stream (agent-stream.ts), the agent's stdout bypasses Sandcastle.
// A docker/podman phase ends with the host taking its branch from the container (ADR 0033): the phase's
// commits are what the branch gained then; what the agent changed beyond its branch is reported, not taken.
import type { AgentProvider, Worktree } from "@ai-hero/sandcastle";
import type { ChildConfig } from "../contract.js";
import type { EventOrigin, EventPrinter } from "./events.js";
import type { AgentStream } from "./agent-stream.js";
import type { AgentOutput } from "./agent-output/agent-output.js";
import type { PhaseCollection } from "./container-provider.js";
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
  /** The agent's output on its way to the log (agent-output/). */
  readonly output: AgentOutput;
  /** What agents of this run changed beyond their branches, none of it taken: the run's `refused_changes`. */
  readonly refused: string[];
  /** The run's worktree when it was opened before the flow (a warm container's run, ADR 0053). */
  readonly worktree?: Promise<Worktree>;
  /** The engine's check (checkSandboxAvailable): no agent starts before it has passed. */
  readonly sandboxReady: Promise<void>;
}

export interface PhaseResult {
  /** The agent's output (the plan's text, for the parallel planner). */
  readonly stdout: string;
  /** Commits the phase's branch gained. */
  readonly commits: number;
  /** The agent left uncommitted changes (docker/podman; a host worktree tells by being kept). */
  readonly dirty: boolean;
}

/** Sandcastle's own default, for a config another tool wrote. */
const DEFAULT_IDLE_SECONDS = 600;
/** Agent iterations per phase: one agent session each; the worker's timeout bounds the whole run. */
const MAX_ITERATIONS = 1;

/** The branch from a container phase's hand-off, and what the agent changed beyond it, reported. */
async function collect(ctx: RunContext, worktree: Worktree, origin: EventOrigin): Promise<PhaseCollection | undefined> {
  const collected = await ctx.sandbox.collect?.(worktree);
  if (collected !== undefined && collected.refused.length > 0) {
    ctx.printer.refused(origin, worktree.branch, collected.refused);
    ctx.refused.push(...collected.refused);
  }
  return collected;
}

export async function runAgentPhase(ctx: RunContext, worktree: Worktree, origin: EventOrigin, kind: PromptKind, args: PromptArgs): Promise<PhaseResult> {
  await ctx.sandboxReady;
  ctx.printer.phase(origin, "started", worktree.branch);
  let result: Awaited<ReturnType<Worktree["run"]>>;
  try {
    const file = promptFile(ctx.config.request.prompt_template_dir, kind);
    result = await worktree.run({
      agent: ctx.agent,
      sandbox: ctx.sandbox.provider(worktree),
      promptFile: file,
      promptArgs: referencedArgs(file, { ...commonArgs(ctx.config), BRANCH: worktree.branch, ...args }),
      maxIterations: MAX_ITERATIONS,
      name: origin.implementer !== undefined ? `${origin.phase}-${origin.implementer}` : origin.phase,
      signal: ctx.site.signal,
      // Sandcastle sees none of a streamed agent's output: its idle timer must not end the run (the worker's timeout does).
      idleTimeoutSeconds: ctx.stream ? ctx.config.request.timeout_minutes * 60 + 60 : (ctx.config.sandbox_settings?.agent_idle_seconds ?? DEFAULT_IDLE_SECONDS),
      logging: {
        type: "file",
        path: ctx.logs.rawPath(origin),
        onAgentStreamEvent: (event) => ctx.output.event(origin, event),
      },
    });
  } catch (error) {
    await ctx.stream?.close();
    // What the agent committed before it failed still reaches its branch, as it would on the host.
    await collect(ctx, worktree, origin).catch(() => undefined);
    ctx.printer.phase(origin, "failed", worktree.branch, ctx.site.signal.aborted ? "aborted" : messageOf(error));
    throw error;
  }
  await ctx.stream?.close();
  let collected: PhaseCollection | undefined;
  try {
    collected = await collect(ctx, worktree, origin);
  } catch (error) {
    ctx.printer.phase(origin, "failed", worktree.branch, messageOf(error));
    throw error;
  }
  const commits = collected?.commits ?? result.commits.length;
  ctx.printer.phase(origin, "ok", worktree.branch, `${commits} commit(s)`);
  return { stdout: result.stdout, commits, dirty: collected?.dirty ?? false };
}
