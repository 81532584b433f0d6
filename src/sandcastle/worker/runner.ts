// One Sandcastle run, end to end: pre-flight, secrets, config file, the supervised child, the result, the audit.
// Free of BullMQ: the processor in workers/ adapts it to a job.
import { stat } from "node:fs/promises";
import { join } from "node:path";
import type { AuditLog } from "../../audit/audit-log.js";
import type { AuditEvent } from "../../audit/events.js";
import type { KillSwitch } from "../../control/kill-switch.js";
import type { Logger } from "../../log.js";
import { createLineRedactor, createRedactor, redactStrings, type Redactor } from "../../redact/index.js";
import { BoundedTail } from "./bounded-tail.js";
import { childArgs, type ChildCommand } from "./child-command.js";
import type { ChildSpare, ClaimedSpare } from "./child-spare.js";
import { writeChildConfig } from "./config-file.js";
import { createRunDir } from "./run-dir.js";
import { endLine, releaseRun } from "./run-end.js";
import { AGENT_WORK_DIR, makeRunDirectory, retainedDir, RunId } from "../retention/retained-runs.js";
import {
  bareResult, containerEngine, effectiveSandbox, KILL_GRACE_MS, SKIP_MESSAGES, type FailureReason, type RunPhase, type SandboxSettings,
  type SandcastleRunRequest, type SandcastleRunResult, type SkipReason, type ChildConfig,
} from "../contract.js";
import type { RunContainers } from "../containers/run-containers.js";
import { readEnvManifest, resolveManifest } from "./env-manifest.js";
import { runsDirProblems } from "../retention/runs-dir-guard.js";
import type { RunSlots } from "./run-slots.js";
import type { StopRequest } from "./run-control.js";
import { LineBatcher, type BatchSink } from "../../session-log/session-log.js";
import { readRecord, RECORD_MARK_BYTE, renderRecord, type RunCompleteOutcome } from "../protocol.js";
import { supervise } from "./supervise.js";
import { agentLine, serviceLine } from "../../session-log/service-lines.js";
import { holdsControls } from "../../session-log/visible-controls.js";
import { UsageMeter } from "./run-usage.js";
import { EgressLedger } from "../egress/egress-ledger.js";
import { egressMode, egressPolicy, egressProblems, type EgressSettings } from "../egress/run-egress.js";
import { AuditUnwritableError, CapacityFullError } from "../../errors.js";

export { CapacityFullError };

export const LOG_TAIL_LINES = 50;

const DASHES = Buffer.from("-----");

export interface RunnerDeps {
  readonly sandcastleEnabled: boolean;
  readonly child: ChildCommand;
  /** Where run directories (run-dir.ts) are made: tmpfs. */
  readonly configDir: string;
  /** The deployment's label (key prefix + Redis), marked in every directory the run gets in a shared place (ADR 0044). */
  readonly deployment: string;
  readonly envManifestDir: string;
  /** RUNS_DIR: a request whose paths lie in it is failed before anything is made or started. */
  readonly runsDir: string;
  /** Where manifest values come from (the worker's env), read at run time only. */
  readonly secretSource: NodeJS.ProcessEnv;
  /** PATH and HOME handed to the child; nothing else of the worker's env is. */
  readonly childPath: string;
  readonly childHome: string;
  readonly killSwitch: KillSwitch;
  readonly slots: RunSlots;
  readonly audit: AuditLog;
  readonly log: Logger;
  readonly graceMs?: number;
  /** Written into the child's config: image, container CLI, limits, custom providers. */
  readonly sandboxSettings?: SandboxSettings;
  /** Removes what a docker/podman run left once its child has ended (a container outlives a killed child). */
  readonly containers?: RunContainers;
  /** SANDCASTLE_TOKEN_BUDGET: a run's budget when its request names none. */
  readonly tokenBudget?: number;
  /** SANDCASTLE_EGRESS_* and SANDCASTLE_CONTAINER_NETWORK: how container runs reach the network (ADR 0035); absent: the engine's bridge. */
  readonly egress?: EgressSettings;
  /** The built-in child started ahead of its run (child-spare.ts): taken by the next run, started again when one ends. */
  readonly spare?: ChildSpare;
}

export interface RunInput {
  readonly runId: string;
  readonly request: SandcastleRunRequest;
  /** Aborted with a StopRequest (kill switch, cancel, shutdown). */
  readonly signal: AbortSignal;
  /** Where redacted log lines go: the session's stream, the job's log. */
  readonly sinks: readonly BatchSink[];
  readonly onSpawn?: (pid: number) => void;
  /** preflight → running → collecting; best-effort (a lost progress update must not fail the run). */
  readonly onPhase?: (phase: RunPhase) => void;
}

const STOP_OUTCOME: Record<StopRequest["reason"], { status: SandcastleRunResult["status"]; reason: FailureReason }> = {
  timeout: { status: "timeout", reason: "timeout" },
  kill_switch_mid_run: { status: "killed", reason: "kill_switch_mid_run" },
  cancelled: { status: "killed", reason: "cancelled" },
  worker_shutdown: { status: "killed", reason: "worker_shutdown" },
  worker_lost: { status: "failed", reason: "worker_lost" },
  budget_exceeded: { status: "killed", reason: "budget_exceeded" },
};

/** What a run got to before its audit log failed. */
interface AuditProgress {
  rows: number;
  spawned: boolean;
}

export async function runSandcastle(input: RunInput, deps: RunnerDeps): Promise<SandcastleRunResult> {
  const started = Date.now();
  const progress: AuditProgress = { rows: 0, spawned: false };
  try {
    return await runAudited(input, deps, started, progress);
  } catch (err) {
    if (!(err instanceof AuditUnwritableError)) throw err;
    // The audit is the record of what agents did with secrets in reach: no run starts, or is reported done, without it.
    deps.log.error({ run_id: input.runId, err: err.message }, "the audit log cannot be written");
    return {
      ...bareResult(input.runId, input.request.branch),
      duration_seconds: (Date.now() - started) / 1000,
      audit_row_count: progress.rows,
      status: "failed",
      skip_reason: null,
      failure_reason: "audit_unwritable",
      exit_code: null,
      message: `${err.message}; ${progress.spawned ? "the run's child ran, but how it ended could not be audited" : "the run was not started"}`,
    };
  }
}

async function runAudited(input: RunInput, deps: RunnerDeps, started: number, progress: AuditProgress): Promise<SandcastleRunResult> {
  const { runId, request } = input;
  input.onPhase?.("preflight");
  let redactor: Redactor = createRedactor();
  const emit = async (event: AuditEvent) => {
    await deps.audit.emit(event, redactor);
    progress.rows += 1;
  };
  const base = (): Omit<SandcastleRunResult, "status" | "skip_reason" | "failure_reason" | "exit_code" | "message"> => ({
    ...bareResult(runId, request.branch),
    duration_seconds: (Date.now() - started) / 1000,
    audit_row_count: progress.rows,
  });
  const skipped = async (reason: SkipReason): Promise<SandcastleRunResult> => {
    await emit({ type: "sandcastle_run_skipped", run_id: runId, skip_reason: reason });
    return { ...base(), status: "skipped", skip_reason: reason, failure_reason: null, exit_code: null, message: SKIP_MESSAGES[reason] };
  };

  // Pre-flight: kill switch, enabled, a run slot, in that order; a skip launches nothing and resolves no manifest.
  if (await deps.killSwitch.isActive()) return skipped("kill_switch_active");
  if (!deps.sandcastleEnabled) return skipped("sandcastle_disabled");
  if (!(await deps.slots.acquire(runId))) {
    if (request.on_capacity === "skip") return skipped("concurrency_cap");
    throw new CapacityFullError();
  }
  const stopLease = deps.slots.keepAlive(runId);
  let runDir: string | null = null;
  let claimed: ClaimedSpare | null = null;
  // An ok run's child removed its containers itself (a failed removal fails the run): nothing to look for after it.
  let endedOk = false;
  // The tokens the run's agents report (usage records), from its child's first line.
  const meter = new UsageMeter();
  try {
    const failed = async (
      reason: FailureReason,
      message: string,
      exitCode: number | null = null,
      extra: { missing_vars?: string[] } = {},
    ): Promise<SandcastleRunResult> => {
      await emit({ type: "sandcastle_run_failed", run_id: runId, failure_reason: reason, exit_code: exitCode, ...extra, usage: meter.usage });
      return { ...base(), status: "failed", skip_reason: null, failure_reason: reason, exit_code: exitCode, message: redactor.text(message) };
    };

    const isContainerRun = containerEngine(effectiveSandbox(request)) !== undefined;
    // The deployment's egress limits, checked again here: a job written to Redis by other means meets them too.
    const egressRefused = deps.egress !== undefined ? egressProblems(request, deps.egress) : [];
    if (egressRefused.length > 0) return await failed("invalid_payload", egressRefused.map((p) => `${p.field}: ${p.problem}`).join("; "));
    const egress = isContainerRun && deps.egress !== undefined ? egressPolicy(request, deps.egress) : undefined;
    const inRunsDir = await runsDirProblems(deps.runsDir, request);
    if (inRunsDir.length > 0) return await failed("invalid_payload", inRunsDir.map((p) => `${p.field} ${p.problem}`).join("; "));
    // The child runs in repo_workdir: a missing one would fail its spawn with a message about node, not the directory.
    const workdir = await stat(request.repo_workdir).catch(() => null);
    if (workdir === null || !workdir.isDirectory()) {
      return await failed(
        "invalid_payload",
        `repo_workdir ${request.repo_workdir} ${workdir === null ? "does not exist" : "is not a directory"} on this worker: the run starts in it`,
      );
    }

    let values: Record<string, string>;
    let projectSlug: string;
    try {
      const manifest = await readEnvManifest(deps.envManifestDir, request.env_manifest_name);
      const resolved = resolveManifest(manifest, deps.secretSource);
      if (resolved.missing.length > 0) {
        return await failed(
          "env_unresolved",
          `env manifest "${request.env_manifest_name}" names variables the worker does not have: ${resolved.missing.join(", ")}`,
          null,
          { missing_vars: resolved.missing },
        );
      }
      values = resolved.values;
      projectSlug = manifest.project_slug;
    } catch (err) {
      return await failed("env_unresolved", (err as Error).message);
    }
    redactor = createRedactor({ secrets: Object.values(values) });
    if (redactor.ignoredShortSecrets > 0)
      deps.log.warn({ run_id: runId, count: redactor.ignoredShortSecrets }, "some secret values are too short to be masked in logs");
    await emit({ type: "sandcastle_env_resolved", run_id: runId, var_count: Object.keys(values).length, project_slug: projectSlug });

    // Only a run id (`run-<uuid>`) becomes a path in RUNS_DIR; a container run without one fails provider_unavailable.
    const workDir = RunId.safeParse(runId).success ? join(retainedDir(deps.runsDir, runId), AGENT_WORK_DIR) : undefined;
    const containerRun = containerEngine(effectiveSandbox(request)) !== undefined;
    // A container run of one phase may take a spare's warm container (ADR 0053): the spare's directories become the run's.
    const warmFit = containerRun && workDir !== undefined && request.parallel_implementers === 1;
    claimed = warmFit ? ((await deps.spare?.claim(runId)) ?? null) : null;
    runDir = claimed?.runDir ?? (await createRunDir(deps.configDir, runId, deps.deployment));
    // The child makes the agent's repositories in it: the run's directory there is ours, marked, before the child starts.
    if (workDir !== undefined && containerRun && claimed === null) {
      const made = await makeRunDirectory(deps.runsDir, runId, deps.deployment).catch((err: Error) => err);
      if (made instanceof Error) return await failed("provider_unavailable", `the run's directory in RUNS_DIR could not be made: ${made.message}`);
    }
    // One deadline for the worker's timeout and the run's containers, which end themselves at it plus the grace.
    const deadline = Date.now() + request.timeout_minutes * 60_000;
    const graceMs = deps.graceMs ?? KILL_GRACE_MS;
    const childConfig: ChildConfig = {
      version: 1,
      run_id: runId,
      request,
      env: { ...request.extra_env, ...values },
      ...(deps.sandboxSettings ? { sandbox_settings: deps.sandboxSettings } : {}),
      ...(workDir !== undefined ? { work_dir: workDir } : {}),
      ...(egress !== undefined ? { egress } : {}),
      ends_by: new Date(deadline + graceMs).toISOString(),
    };
    const configPath = await writeChildConfig(runDir, childConfig);
    if (warmFit) deps.spare?.remember(childConfig);
    await emit({
      type: "sandcastle_run_started",
      run_id: runId,
      agent: request.agent,
      sandbox: effectiveSandbox(request),
      branch: request.branch,
      ...(egress !== undefined ? { egress: egressMode(egress) } : {}),
    });

    const streamRedact = createLineRedactor(redactor);
    const tail = new BoundedTail(LOG_TAIL_LINES);
    const batcher = new LineBatcher(input.sinks);
    const store = (line: string) => {
      tail.push(line);
      batcher.write(line);
    };
    let complete: RunCompleteOutcome | null = null;
    let pemOpen = false;
    const budget = request.token_budget ?? deps.tokenBudget;
    const ledger = new EgressLedger(egress?.mode === "allowlist");
    // Past its budget a run is stopped as a cancel or the kill switch stops it (TERM, grace, KILL; containers removed).
    const overBudget = new AbortController();
    const onLine = (raw: string) => {
      if (raw.charCodeAt(0) === RECORD_MARK_BYTE) {
        const read = readRecord(raw, (value) => redactStrings(value, (s) => redactor.text(s)));
        if (read.kind === "run_complete") complete = read.outcome;
        else if (read.kind === "note" && read.record.type === "egress") {
          ledger.add(read.record);
          store(serviceLine(streamRedact(renderRecord(read.record))));
        } else if (read.kind === "usage") {
          meter.add(read.record);
          if (budget !== undefined && meter.tokens > budget && !overBudget.signal.aborted)
            overBudget.abort({ reason: "budget_exceeded" } satisfies StopRequest);
        } else store(serviceLine(streamRedact(read.kind === "note" ? renderRecord(read.record) : `── an unreadable record from the child (${read.problem})`)));
        return;
      }
      // Redacted first (a secret hidden by escapes is found), then its controls shown: it can neither steer a terminal nor pass for ours.
      store(agentLine(streamRedact(raw)));
      if (raw.includes("-----BEGIN")) pemOpen = true;
      else if (raw.includes("-----END")) pemOpen = false;
    };
    // Lines with nothing special (no record, no control character, no PEM marker) are redacted as one block of
    // bytes: every rule is line-local, so this equals line by line, at a fraction of the cost.
    const onBlock = (block: Buffer) => {
      if (pemOpen || holdsControls(block) || block.includes(DASHES)) {
        for (const line of block.toString("utf8").split("\n")) onLine(line.endsWith("\r") ? line.slice(0, -1) : line);
        return;
      }
      const stored = redactor.bytes(block);
      tail.pushBlock(stored);
      batcher.write(stored);
    };

    const handoff = { config: configPath, cwd: request.repo_workdir };
    const warm = (claimed !== null ? claimed.hand({ ...handoff, warm: true }) : deps.spare?.take(handoff)) ?? undefined;
    const exit = await supervise({
      ...(warm !== undefined ? { started: warm } : {}),
      command: deps.child.command,
      args: childArgs(deps.child, configPath),
      cwd: request.repo_workdir,
      env: { PATH: deps.childPath, HOME: deps.childHome, NODE_NO_WARNINGS: "1" },
      timeoutMs: Math.max(0, deadline - Date.now()),
      signal: AbortSignal.any([input.signal, overBudget.signal]),
      onLine,
      onBlock,
      onSpawn: (pid) => {
        progress.spawned = true;
        input.onPhase?.("running");
        input.onSpawn?.(pid);
      },
      backpressure: () => (batcher.saturated ? batcher.drained() : null),
      graceMs,
    });
    input.onPhase?.("collecting");

    // Whatever the run's end, what its agents changed beyond their branches is on record (ADR 0033).
    const reported = complete as RunCompleteOutcome | null;
    const refused = reported?.ok ? (reported.value.result.refused_changes ?? []) : [];
    if (refused.length > 0) await emit({ type: "sandcastle_changes_refused", run_id: runId, changes: refused });

    const settle = async (): Promise<SandcastleRunResult> => {
      if (exit.spawnError !== null) return failed("spawn_failed", `could not start the child: ${exit.spawnError}`);
      if (exit.stoppedFor !== null) {
        const outcome = STOP_OUTCOME[exit.stoppedFor.reason];
        await emit({
          type: "sandcastle_run_failed",
          run_id: runId,
          failure_reason: outcome.reason,
          exit_code: exit.exitCode,
          ...(exit.stoppedFor.by ? { requested_by: exit.stoppedFor.by } : {}),
          usage: meter.usage,
        });
        const message =
          exit.stoppedFor.reason === "timeout"
            ? `timed out after ${request.timeout_minutes} min`
            : exit.stoppedFor.reason === "budget_exceeded"
              ? `stopped: the agents had used ${meter.tokens} tokens, past the run's budget of ${budget}`
              : `stopped: ${outcome.reason}${exit.stoppedFor.by ? ` by ${exit.stoppedFor.by}` : ""}`;
        return { ...base(), status: outcome.status, skip_reason: null, failure_reason: outcome.reason, exit_code: exit.exitCode, message };
      }
      const result = complete as RunCompleteOutcome | null;
      if (result === null)
        return failed("no_result", `the child ended (exit ${exit.exitCode ?? exit.exitSignal}) without a run_complete record`, exit.exitCode);
      if (!result.ok) return failed("bad_result", `run_complete is invalid: ${result.problem}`, exit.exitCode);
      const r = result.value.result;
      const shared = { ...base(), branch: r.branch, commits: r.commits, merged_branch: r.merged_branch };
      if (r.status === "ok" && exit.exitCode === 0) {
        const duration = (Date.now() - started) / 1000;
        await emit({ type: "sandcastle_run_ok", run_id: runId, duration_s: duration, commits_count: r.commits.length, usage: meter.usage });
        return {
          ...shared,
          duration_seconds: duration,
          audit_row_count: progress.rows,
          status: "ok",
          skip_reason: null,
          failure_reason: null,
          exit_code: 0,
          message: r.message ?? null,
        };
      }
      const reason: FailureReason = r.status === "ok" ? "nonzero_exit" : (r.failure_reason ?? "agent_failed");
      const failure = await failed(reason, r.message ?? `the run failed (exit ${exit.exitCode})`, exit.exitCode);
      return { ...failure, branch: r.branch, commits: r.commits, merged_branch: r.merged_branch };
    };
    // One audit row per connection the egress proxy refused.
    for (const denied of ledger.deniedConnections) await emit({ type: "sandcastle_egress_denied", run_id: runId, host: denied.host, port: denied.port });
    const result = { ...(await settle()), refused_changes: refused, usage: meter.usage, egress: ledger.summary };
    endedOk = result.status === "ok";
    // The run's one ending, as the result says it: the child's own run_complete is not shown (after a
    // kill switch it says `cancelled`, the signal it got, not why).
    store(serviceLine(endLine(result)));
    await batcher.close();
    if (batcher.failedBatches > 0)
      deps.log.warn(
        { run_id: runId, lost_batches: batcher.failedBatches },
        "some of the run's log lines could not be stored (Redis refused or was unreachable)",
      );
    return { ...result, log_tail: tail.lines() };
  } finally {
    await claimed?.release();
    stopLease();
    await releaseRun(
      runId,
      { runDir: runDir !== null, containers: runDir !== null && !endedOk && containerEngine(effectiveSandbox(request)) !== undefined },
      deps,
    );
  }
}
