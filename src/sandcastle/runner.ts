// One Sandcastle run, end to end: pre-flight, secrets, config file, the supervised child, the result, the audit.
// Free of BullMQ: the processor in workers/ adapts it to a job.
import { stat } from "node:fs/promises";
import type { AuditLog } from "../audit/audit-log.js";
import { redactStrings } from "../audit/audit-log.js";
import type { AuditEvent } from "../audit/events.js";
import type { KillSwitch } from "../control/kill-switch.js";
import type { Logger } from "../log.js";
import { createLineRedactor, createRedactor, type Redactor } from "../redact/index.js";
import { BoundedTail } from "./bounded-tail.js";
import { childArgs, type ChildCommand } from "./child-command.js";
import { writeChildConfig } from "./config-file.js";
import { createRunDir, removeRunDir } from "./run-dir.js";
import { containerEngine, effectiveSandbox, SKIP_MESSAGES, type FailureReason, type RunPhase, type SandboxSettings, type SandcastleRunRequest, type SandcastleRunResult, type SkipReason } from "./contract.js";
import type { RunContainers } from "./run-containers.js";
import { readEnvManifest, resolveManifest } from "./env-manifest.js";
import { runsDirProblems } from "./runs-dir-guard.js";
import type { RunSlots } from "./run-slots.js";
import type { StopRequest } from "./run-control.js";
import { LineBatcher, type BatchSink } from "./session-log.js";
import { readRecord, RECORD_MARK_BYTE, renderRecord, type RunCompleteOutcome } from "./protocol.js";
import { supervise } from "./supervise.js";
import { AuditUnwritableError, CapacityFullError } from "../errors.js";

export { CapacityFullError };

export const LOG_TAIL_LINES = 50;

const ESC = 0x1b;
const CR = 0x0d;
const DASHES = Buffer.from("-----");

export interface RunnerDeps {
  readonly sandcastleEnabled: boolean;
  readonly child: ChildCommand;
  /** Where run directories (run-dir.ts) are made: tmpfs. */
  readonly configDir: string;
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
};

/** The last line of a run's log: how it ended, with the result's one reason. */
export function endLine(result: SandcastleRunResult): string {
  const reason = result.failure_reason ?? result.skip_reason;
  return `── run ${result.status}${reason !== null ? ` (${reason})` : ""}${result.message ? `: ${result.message}` : ""}`;
}

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
      run_id: input.runId,
      branch: input.request.branch,
      commits: [],
      merged_branch: null,
      log_tail: [],
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
    run_id: runId,
    branch: request.branch,
    commits: [],
    merged_branch: null,
    log_tail: [],
    duration_seconds: (Date.now() - started) / 1000,
    audit_row_count: progress.rows,
  });
  const skipped = async (reason: SkipReason): Promise<SandcastleRunResult> => {
    await emit({ type: "sandcastle_run_skipped", run_id: runId, skip_reason: reason });
    return { ...base(), status: "skipped", skip_reason: reason, failure_reason: null, exit_code: null, message: SKIP_MESSAGES[reason] };
  };

  // Pre-flight, in the seed's order; a skip launches nothing and resolves no manifest.
  if (await deps.killSwitch.isActive()) return skipped("kill_switch_active");
  if (!deps.sandcastleEnabled) return skipped("sandcastle_disabled");
  if (!(await deps.slots.acquire(runId))) {
    if (request.on_capacity === "skip") return skipped("concurrency_cap");
    throw new CapacityFullError();
  }
  const stopLease = deps.slots.keepAlive(runId);
  let runDir: string | null = null;
  try {
    const failed = async (reason: FailureReason, message: string, exitCode: number | null = null, extra: { missing_vars?: string[] } = {}): Promise<SandcastleRunResult> => {
      await emit({ type: "sandcastle_run_failed", run_id: runId, failure_reason: reason, exit_code: exitCode, ...extra });
      return { ...base(), status: "failed", skip_reason: null, failure_reason: reason, exit_code: exitCode, message: redactor.text(message) };
    };

    const inRunsDir = await runsDirProblems(deps.runsDir, request);
    if (inRunsDir.length > 0) return await failed("invalid_payload", inRunsDir.map((p) => `${p.field} ${p.problem}`).join("; "));
    // The child runs in repo_workdir: a missing one would fail its spawn with a message about node, not the directory.
    const workdir = await stat(request.repo_workdir).catch(() => null);
    if (workdir === null || !workdir.isDirectory()) {
      return await failed("invalid_payload", `repo_workdir ${request.repo_workdir} ${workdir === null ? "does not exist" : "is not a directory"} on this worker: the run starts in it`);
    }

    let values: Record<string, string>;
    let projectSlug: string;
    try {
      const manifest = await readEnvManifest(deps.envManifestDir, request.env_manifest_name);
      const resolved = resolveManifest(manifest, deps.secretSource);
      if (resolved.missing.length > 0) {
        return await failed("env_unresolved", `env manifest "${request.env_manifest_name}" names variables the worker does not have: ${resolved.missing.join(", ")}`, null, { missing_vars: resolved.missing });
      }
      values = resolved.values;
      projectSlug = manifest.project_slug;
    } catch (err) {
      return await failed("env_unresolved", (err as Error).message);
    }
    redactor = createRedactor({ secrets: Object.values(values) });
    if (redactor.ignoredShortSecrets > 0) deps.log.warn({ run_id: runId, count: redactor.ignoredShortSecrets }, "some secret values are too short to be masked in logs");
    await emit({ type: "sandcastle_env_resolved", run_id: runId, var_count: Object.keys(values).length, project_slug: projectSlug });

    runDir = await createRunDir(deps.configDir, runId);
    const configPath = await writeChildConfig(runDir, {
      version: 1,
      run_id: runId,
      request,
      env: { ...request.extra_env, ...values },
      ...(deps.sandboxSettings ? { sandbox_settings: deps.sandboxSettings } : {}),
    });
    await emit({ type: "sandcastle_run_started", run_id: runId, agent: request.agent, sandbox: effectiveSandbox(request), branch: request.branch });

    const streamRedact = createLineRedactor(redactor);
    const tail = new BoundedTail(LOG_TAIL_LINES);
    const batcher = new LineBatcher(input.sinks);
    const store = (line: string) => {
      tail.push(line);
      batcher.write(line);
    };
    let complete: RunCompleteOutcome | null = null;
    let pemOpen = false;
    const onLine = (raw: string) => {
      if (raw.charCodeAt(0) === RECORD_MARK_BYTE) {
        const read = readRecord(raw, (value) => redactStrings(value, (s) => redactor.text(s)));
        if (read.kind === "run_complete") complete = read.outcome;
        else store(streamRedact(read.kind === "note" ? renderRecord(read.record) : `── an unreadable record from the child (${read.problem})`));
        return;
      }
      store(streamRedact(raw));
      if (raw.includes("-----BEGIN")) pemOpen = true;
      else if (raw.includes("-----END")) pemOpen = false;
    };
    // Lines with nothing special (no record, ANSI, PEM marker or CR) are redacted as one block of bytes:
    // every rule is line-local, so this equals line by line, at a fraction of the cost.
    const onBlock = (block: Buffer) => {
      if (pemOpen || block.includes(RECORD_MARK_BYTE) || block.includes(ESC) || block.includes(DASHES) || block.includes(CR)) {
        for (const line of block.toString("utf8").split("\n")) onLine(line.endsWith("\r") ? line.slice(0, -1) : line);
        return;
      }
      const stored = redactor.bytes(block);
      tail.pushBlock(stored);
      batcher.write(stored);
    };

    const exit = await supervise({
      command: deps.child.command,
      args: childArgs(deps.child, configPath),
      cwd: request.repo_workdir,
      env: { PATH: deps.childPath, HOME: deps.childHome, NODE_NO_WARNINGS: "1" },
      timeoutMs: request.timeout_minutes * 60_000,
      signal: input.signal,
      onLine,
      onBlock,
      onSpawn: (pid) => {
        progress.spawned = true;
        input.onPhase?.("running");
        input.onSpawn?.(pid);
      },
      backpressure: () => (batcher.saturated ? batcher.drained() : null),
      ...(deps.graceMs !== undefined ? { graceMs: deps.graceMs } : {}),
    });
    input.onPhase?.("collecting");

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
        });
        const message = exit.stoppedFor.reason === "timeout" ? `timed out after ${request.timeout_minutes} min` : `stopped: ${outcome.reason}${exit.stoppedFor.by ? ` by ${exit.stoppedFor.by}` : ""}`;
        return { ...base(), status: outcome.status, skip_reason: null, failure_reason: outcome.reason, exit_code: exit.exitCode, message };
      }
      const result = complete as RunCompleteOutcome | null;
      if (result === null) return failed("no_result", `the child ended (exit ${exit.exitCode ?? exit.exitSignal}) without a run_complete record`, exit.exitCode);
      if (!result.ok) return failed("bad_result", `run_complete is invalid: ${result.problem}`, exit.exitCode);
      const r = result.value.result;
      const shared = { ...base(), branch: r.branch, commits: r.commits, merged_branch: r.merged_branch };
      if (r.status === "ok" && exit.exitCode === 0) {
        const duration = (Date.now() - started) / 1000;
        await emit({ type: "sandcastle_run_ok", run_id: runId, duration_s: duration, commits_count: r.commits.length });
        return { ...shared, duration_seconds: duration, audit_row_count: progress.rows, status: "ok", skip_reason: null, failure_reason: null, exit_code: 0, message: r.message ?? null };
      }
      const reason: FailureReason = r.status === "ok" ? "nonzero_exit" : (r.failure_reason ?? "agent_failed");
      const failure = await failed(reason, r.message ?? `the run failed (exit ${exit.exitCode})`, exit.exitCode);
      return { ...failure, branch: r.branch, commits: r.commits, merged_branch: r.merged_branch };
    };
    const result = await settle();
    // The run's one ending, as the result says it: the child's own run_complete is not shown (after a
    // kill switch it says `cancelled`, the signal it got, not why).
    store(endLine(result));
    await batcher.close();
    if (batcher.failedBatches > 0) deps.log.warn({ run_id: runId, lost_batches: batcher.failedBatches }, "some of the run's log lines could not be stored (Redis refused or was unreachable)");
    return { ...result, log_tail: tail.lines() };
  } finally {
    stopLease();
    if (runDir !== null && deps.containers && containerEngine(effectiveSandbox(request)) !== undefined) {
      const removed = await deps.containers.removeRun(runId).catch((err: Error) => {
        deps.log.warn({ run_id: runId, err: err.message }, "could not remove the run's containers; the next worker start will");
        return 0;
      });
      if (removed > 0) deps.log.info({ run_id: runId, containers: removed }, "removed containers the run's child left");
    }
    if (runDir !== null) await removeRunDir(deps.configDir, runId);
    await deps.slots.release(runId).catch((err: Error) => deps.log.warn({ run_id: runId, err: err.message }, "could not release the run slot; its lease will lapse"));
  }
}
