#!/usr/bin/env node
// The run subprocess (default SANDCASTLE_BIN): `main.js run --config <path> [--json]`.
//
// The worker spawns it detached (own process group), cwd = repo_workdir, env = exactly PATH, HOME,
// NODE_NO_WARNINGS=1, with a pipe on stdin it never closes while alive. The child reads the 0600
// config (ChildConfig), drives @ai-hero/sandcastle, prints the agent's lines and its own records
// (protocol.ts), the last one `run_complete`, and exits once stdout has taken it all.
// Exit codes: 0 ok, 1 failed, 2 invalid config/request (invalid_payload).
//
// Stopping: SIGTERM/SIGINT/SIGHUP abort the Sandcastle run (AbortSignal), end the agent's processes,
// and exit 1 once the run settles or after 3 s at most. stdin closing (the worker died) aborts too,
// then kills the whole process group (this process included) so no agent outlives its worker.
//
// The child never pushes: commits stay on request.branch in repo_workdir (dry_run also forces noSandbox).
import { dirname } from "node:path";
import { commitsAdded, commitsAddedSync, runBase, type RunBase } from "./commits.js";
import { loadChildConfig } from "./child-config.js";
import { EventPrinter, type RunCompleteResult } from "./events.js";
import { PhaseLogs } from "./phase-logs.js";
import { AgentStream } from "./agent-stream.js";
import { isGroupLeader, killOwnGroup, signalOwnedProcesses } from "./process-group.js";
import { RunFailure, classifyFailure, messageOf } from "./run-failure.js";
import { SecretScrubber } from "./secret-scrubber.js";
import { AGENT_CLIS, checkAgentAvailable, buildAgent } from "./agents.js";
import { agentSetup } from "./agent-endpoints.js";
import { AgentOutput } from "./agent-output/agent-output.js";
import { agentFailure } from "./agent-output/agent-failure.js";
import type { EgressDecision } from "../egress/egress-proxy.js";
import { runParallelPlanner } from "./parallel-planner.js";
import { checkTemplate } from "./prompt.js";
import { checkRepository, excludeSandcastleDir } from "./repository.js";
import { buildSandbox, checkSandboxAvailable, runsOnHost, type SandboxChoice } from "./sandboxes.js";
import { containerEngine, effectiveSandbox } from "../contract.js";
import { hardenHostGit } from "./container-user.js";
import { runSingle } from "./single-run.js";
import { closeWorktree, openWorktree } from "./worktrees.js";
import type { Worktree } from "@ai-hero/sandcastle";
import { releaseStdin, watchStdin } from "./stdin-watchdog.js";
import { awaitHandoff } from "./spare-handoff.js";
import { WarmSpare } from "./warm-spare.js";
import { releaseAllLocks } from "./lock-files.js";
import { exitWhenFlushed } from "../../flushed-exit.js";

const USAGE = "usage: main.js run --config <path> | --config-on-stdin [--json]";
/** After SIGTERM: how long the aborted run may take to settle before the child exits anyway. */
const TERM_GRACE_MS = 3000;
/** After stdin closed: the worker is gone, so wait less before killing the group. */
const ORPHAN_GRACE_MS = 1500;
/** Sandcastle's own default: a config without the worker's setting (another tool wrote it). */
const DEFAULT_IDLE_SECONDS = 600;

const printer = new EventPrinter(new SecretScrubber([]));
const controller = new AbortController();
let branch = "";
let base: RunBase | undefined;
let sandbox: SandboxChoice | undefined;
let logs: PhaseLogs | undefined;
let stream: AgentStream | undefined;
let stopping: RunFailure | undefined;
/** A spare's warm container (ADR 0053), until its run takes or discards it. */
let warm: WarmSpare | undefined;
/** The run's worktree, opened before its flow (a warm container's run), until runSingle takes it. */
let openedAhead: { readonly worktree: Promise<Worktree>; close(): Promise<unknown> } | undefined;
/** What agents changed beyond their branches (ADR 0033), reported with the result whatever it is. */
const refused: string[] = [];

type Args = { ok: true; configPath: string | null } | { ok: false; message: string };

/** `--config-on-stdin`: a spare started ahead of its run (child-spare.ts) learns its run from the first line of stdin. */
function parseArgs(argv: readonly string[]): Args {
  const [command, ...rest] = argv;
  if (command !== "run") return { ok: false, message: `expected the \`run\` command; ${USAGE}` };
  let configPath: string | undefined;
  let onStdin = false;
  for (let i = 0; i < rest.length; i++) {
    const arg = rest[i]!;
    if (arg === "--json") continue;
    if (arg === "--config-on-stdin") onStdin = true;
    else if (arg === "--config") configPath = rest[++i];
    else if (arg.startsWith("--config=")) configPath = arg.slice("--config=".length);
    else return { ok: false, message: `unknown argument ${JSON.stringify(arg)}; ${USAGE}` };
  }
  if (onStdin && configPath === undefined) return { ok: true, configPath: null };
  if (configPath === undefined || configPath.length === 0) return { ok: false, message: `--config <path> is required; ${USAGE}` };
  return { ok: true, configPath };
}

function exitCodeFor(result: RunCompleteResult): number {
  if (result.status === "ok") return 0;
  return result.failure_reason === "invalid_payload" ? 2 : 1;
}

function releaseResources(): void {
  for (const release of [() => stream?.dispose(), () => sandbox?.dispose(), () => warm?.disposeSync(), () => logs?.dispose(), releaseAllLocks]) {
    try {
      release();
    } catch {
      // best effort
    }
  }
}

let finishing: Promise<never> | undefined;

/** Prints run_complete (once), ends what the run left running, exits once stdout is delivered. */
function finish(result: RunCompleteResult): Promise<never> {
  if (finishing) return finishing;
  printer.runComplete(result);
  releaseResources();
  releaseStdin();
  if (stopping?.reason === "worker_lost") killOwnGroup();
  else signalOwnedProcesses("SIGKILL");
  finishing = exitWhenFlushed(exitCodeFor(result));
  return finishing;
}

function failedResult(failure: RunFailure, commits: { sha: string }[] = []): RunCompleteResult {
  return { branch, commits, merged_branch: null, status: "failed", failure_reason: failure.reason, message: failure.message, refused_changes: [...refused] };
}

/** SIGTERM or a dead worker: abort the run, end the agent's processes, bound the wait. */
function stop(failure: RunFailure, graceMs: number): void {
  if (stopping !== undefined) {
    // A second signal: do not wait any longer.
    void finish(failedResult(stopping, base ? commitsAddedSync(base) : []));
    return;
  }
  stopping = failure;
  controller.abort(failure);
  // Sandcastle's noSandbox exec does not kill the agent on abort: SIGTERM what runs now; finish()
  // SIGKILLs whatever is left once the run has settled (git cleanup included by then).
  signalOwnedProcesses("SIGTERM", 1);
  setTimeout(() => void finish(failedResult(failure, base ? commitsAddedSync(base) : [])), graceMs);
}

/** A write to a pipe whose reader is gone. Our own stdout has its own listener (events.ts), so this is the agent's stdin. */
function isPromptEpipe(error: unknown): boolean {
  const e = error as NodeJS.ErrnoException;
  return e?.code === "EPIPE" && e.syscall === "write";
}

function installProcessHandlers(): void {
  const onSignal = (signal: NodeJS.Signals) => stop(new RunFailure("cancelled", `received ${signal}: run aborted`), TERM_GRACE_MS);
  process.on("SIGTERM", onSignal);
  process.on("SIGINT", onSignal);
  process.on("SIGHUP", onSignal);
  process.on("uncaughtException", (error) => {
    // Sandcastle writes the prompt to the agent's stdin with no error listener: an agent that exits
    // without reading it raises EPIPE here. The agent's exit is reported by Sandcastle as usual.
    if (isPromptEpipe(error)) return;
    void finish(failedResult(new RunFailure("agent_failed", `unexpected error: ${messageOf(error)}`)));
  });
  process.on("unhandledRejection", (error) => void finish(failedResult(new RunFailure("agent_failed", `unexpected error: ${messageOf(error)}`))));
  // Anything else that exits the process (Sandcastle's own SIGTERM handler calls process.exit(1)
  // when a docker sandbox is up) still leaves a run_complete and no agent processes behind.
  process.on("exit", () => {
    if (!printer.isComplete) {
      const failure = stopping ?? new RunFailure("agent_failed", "the child exited before the run finished");
      printer.runComplete(failedResult(failure, base ? commitsAddedSync(base) : []));
    }
    releaseResources();
    signalOwnedProcesses("SIGKILL");
  });
  watchStdin(() => {
    if (!isGroupLeader()) printer.log("warn", "stdin closed and this process does not lead its process group: killing descendants only");
    stop(new RunFailure("worker_lost", "stdin closed: the worker is gone"), ORPHAN_GRACE_MS);
  });
}

async function main(): Promise<never> {
  printer.captureOutput();
  const args = parseArgs(process.argv.slice(2));
  // A spare: everything loaded before its run is known (the container provider too), so the run starts on a warm process;
  // asked, it starts a warm container too (ADR 0053).
  const handoff =
    args.ok && args.configPath === null
      ? await awaitHandoff(
          Promise.all([import("@ai-hero/sandcastle"), import("./container-provider.js")]),
          (line) => (warm = WarmSpare.start(line, (d) => printer.egress(d.host, d.port, d.allowed, d.failed))),
        )
      : undefined;
  if (handoff === null) {
    warm?.disposeSync();
    return exitWhenFlushed(0); // its worker let it go (or died) before giving it a run
  }
  installProcessHandlers();

  if (!args.ok) return finish(failedResult(new RunFailure("invalid_payload", args.message)));
  if (handoff !== undefined && handoff.problem !== undefined) return finish(failedResult(new RunFailure("invalid_payload", handoff.problem)));
  const configPath = handoff?.configPath ?? args.configPath!;

  const loaded = await loadChildConfig(configPath);
  printer.useScrubber(loaded.scrubber);
  if (!loaded.ok) {
    branch = loaded.branch;
    return finish(failedResult(new RunFailure("invalid_payload", loaded.message)));
  }
  const { config } = loaded;
  const { request } = config;
  branch = request.branch;
  warm?.handedOver(handoff?.warm === true, dirname(configPath), config);

  // The library is the heavy part of startup: load it while git and the checks run.
  const sandcastle = import("@ai-hero/sandcastle");
  sandcastle.catch(() => {});

  // A real agent: where its CLI sends its model requests, and how its output is read (ADR 0034).
  const setup = request.agent === "script" ? undefined : agentSetup(request.agent, request, config.env);
  const output = new AgentOutput(request.agent, printer, (failure) => stop(failure, TERM_GRACE_MS), setup?.keyVar ?? null);
  const sandboxName = effectiveSandbox(request);
  const failureOf = (error: unknown): RunFailure =>
    (request.agent !== "script" && setup !== undefined
      ? agentFailure(error, output.errors, {
          cli: AGENT_CLIS[request.agent],
          image: containerEngine(sandboxName) !== undefined ? (request.image ?? config.sandbox_settings?.default_image ?? null) : null,
          keyVar: setup.keyVar,
          baseUrlVar: setup.baseUrlVar,
          idleSeconds: config.sandbox_settings?.agent_idle_seconds ?? DEFAULT_IDLE_SECONDS,
        })
      : undefined) ?? classifyFailure(error);

  try {
    const parallel = request.parallel_implementers > 1;
    const site = {
      config,
      runDir: dirname(configPath),
      homeFiles: setup?.homeFiles ?? [],
      onEgress: (d: EgressDecision) => printer.egress(d.host, d.port, d.allowed, d.failed),
    };
    checkTemplate(request.prompt_template_dir, parallel);
    hardenHostGit(request.repo_workdir, sandboxName);
    // A warm container serves only a run of one phase in a container; any other run ends it now.
    const mayTakeWarm = handoff?.warm === true && warm !== undefined && !parallel && containerEngine(sandboxName) !== undefined;
    if (!mayTakeWarm) void warm?.discard();
    // The engine's answer (its CLI's start, the image lookup) takes as long as git's checks: both at once. A run that may
    // take a warm container asks only if it does not (that container's image is there): the engine's start costs cores.
    let sandboxReady = mayTakeWarm ? undefined : checkSandboxAvailable(sandboxName, site);
    const engineCheck = (): Promise<void> => (sandboxReady ??= checkSandboxAvailable(sandboxName, site));
    sandboxReady?.catch(() => {});
    // With a container already up, Sandcastle's host worktree is the longest step before the agent: it opens first, beside
    // git's checks when the warm container's repository is this one (its git dir known), else right after them (ADR 0053).
    const openAhead = (commonDir: string) => {
      const worktreeSite = { repo: request.repo_workdir, commonDir, signal: controller.signal };
      const worktree = sandcastle.then((sc) => openWorktree({ ...worktreeSite, sc }, request.branch));
      worktree.catch(() => {});
      openedAhead = { worktree, close: () => worktree.then((w) => closeWorktree(worktreeSite, w)) };
    };
    const knownCommonDir = mayTakeWarm ? warm?.commonDirOf(request.repo_workdir) : undefined;
    if (knownCommonDir !== undefined) openAhead(knownCommonDir);
    const repository = await checkRepository(request.repo_workdir, request.branch);
    const { commonDir } = repository;
    base = runBase(request.repo_workdir, request.branch, repository);
    if (mayTakeWarm && openedAhead === undefined) openAhead(commonDir);
    // The engine's check, when it fails, says more than whatever else failed for want of it.
    const engineFirst = async (error: unknown): Promise<never> => {
      await engineCheck();
      throw error;
    };
    sandbox = await buildSandbox(sandboxName, site, commonDir, mayTakeWarm ? warm : undefined).catch(engineFirst);
    if (sandbox.warm === true) {
      sandboxReady ??= Promise.resolve();
      printer.log("info", "the run's container is the spare's warm one, started before the run (ADR 0053)");
    } else engineCheck().catch(() => {});
    try {
      checkAgentAvailable(request, runsOnHost(sandboxName), config.env);
    } catch (error) {
      await engineFirst(error);
    }
    // A container takes longest to come up: it starts now, while the rest of the run's set-up goes on (ADR 0052).
    // Should the engine's check fail, the run ends with its message and the container is removed with the run.
    if (!parallel) await sandbox.startEarly?.(request.branch, base.base);
    await excludeSandcastleDir(commonDir).catch(() => {});

    const sc = await sandcastle;
    controller.signal.throwIfAborted();
    // One agent at a time whose output the child reads itself: the script agent on the host, one phase.
    if (request.agent === "script" && sandbox.runsOnHost && !parallel) stream = AgentStream.open(site.runDir, printer, loaded.scrubber);
    const agent = buildAgent(sc, request, { ...setup?.env, ...sandbox.agentEnv }, sandbox.runsOnHost, {
      ...(stream ? { stdoutTo: stream.path } : {}),
      ...(setup ? { model: setup.model } : {}),
    });
    logs = new PhaseLogs(site.runDir);
    const phaseLogs = logs;
    printer.dropForeign((line) => phaseLogs.mentionsRawLog(line));
    const ctx = {
      config,
      agent,
      sandbox,
      printer,
      logs,
      site: { sc, repo: request.repo_workdir, commonDir, signal: controller.signal },
      ...(openedAhead !== undefined ? { worktree: openedAhead.worktree } : {}),
      ...(stream ? { stream } : {}),
      output,
      refused,
      // Awaited before the first agent starts: its worktree meanwhile.
      sandboxReady: engineCheck(),
    };
    openedAhead = undefined; // runSingle's from here: it closes it
    const outcome = parallel ? await runParallelPlanner(ctx) : await runSingle(ctx);
    controller.signal.throwIfAborted();

    const commits = await commitsAdded(base);
    return finish({
      branch,
      commits,
      merged_branch: outcome.mergedBranch,
      status: "ok",
      failure_reason: null,
      message: outcome.notes.length > 0 ? outcome.notes.join("; ") : null,
      refused_changes: [...refused],
    });
  } catch (error) {
    const failure = stopping ?? failureOf(error);
    // A worktree opened ahead for a run that failed before its agent: removed as runSingle would.
    await openedAhead?.close().catch(() => {});
    const commits = base ? await commitsAdded(base).catch(() => []) : [];
    return finish(failedResult(failure, commits));
  }
}

void main();
