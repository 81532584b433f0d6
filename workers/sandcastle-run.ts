// Thin processor for sandcastle-run: validate the payload, run it through src/sandcastle, map the outcome to BullMQ.
import { DelayedError, UnrecoverableError, type Job } from "bullmq";
import { failedRunReason, lostRunResult, RUN_JOB, runProgress, SANDCASTLE_RUN_QUEUE, SandcastleRunRequest, scheduleReap, STALLED_REASON, storeRunResult } from "../queues/index.js";
import { formatIssues } from "../src/invalid-input.js";
import { jobLogger } from "../src/log.js";
import { createRedisClient } from "../src/redis/connect.js";
import { StreamAppender } from "../src/redis/stream-appender.js";
import { childCommand } from "../src/sandcastle/child-command.js";
import { removeRunDir, resolveConfigDir, sweepRunDirs } from "../src/sandcastle/run-dir.js";
import { deploymentLabel, RunContainers } from "../src/sandcastle/run-containers.js";
import type { SandboxSettings } from "../src/sandcastle/contract.js";
import { RunControl } from "../src/sandcastle/run-control.js";
import { RunRetention } from "../src/sandcastle/run-retention.js";
import { RunSlots } from "../src/sandcastle/run-slots.js";
import { CapacityFullError, runSandcastle, type RunnerDeps } from "../src/sandcastle/runner.js";
import type { SandcastleRunResult } from "../src/sandcastle/contract.js";
import { budgetedJobLogSink, markerCommand, sessionLogKey, sessionLogSink, type RunMarker } from "../src/sandcastle/session-log.js";
import type { QueueWorkerSpec, WorkerDeps } from "./deps.js";

const CAPACITY_RETRY_MS = 1000;

export async function createSandcastleRunWorker(deps: WorkerDeps): Promise<QueueWorkerSpec> {
  const { config, log } = deps;
  const prefix = config.SCQ_KEY_PREFIX;
  const { dir: configDir, onTmpfs } = resolveConfigDir(config.SANDCASTLE_CONFIG_DIR);
  if (!onTmpfs) log.warn({ config_dir: configDir }, "SANDCASTLE_CONFIG_DIR is not on tmpfs (/dev/shm): secrets touch a disk for the length of a run");

  const subscriber = createRedisClient(deps.target, "worker");
  subscriber.on("error", () => {});
  const control = await RunControl.start(subscriber, prefix, deps.killSwitch, (err) => log.warn({ err: err.message }, "ignored a malformed control message"));
  const slots = new RunSlots(deps.redis, prefix, config.MAX_CONCURRENT_SANDCASTLE_RUNS);
  // Session logs get their own connection: megabytes of log lines must not delay BullMQ's lock renewals.
  const logWriter = new StreamAppender(deps.target);

  const activeRunIds = async () => new Set((await deps.queues.sandcastleRun.getActive()).map((j) => String(j.id)));
  const swept = await sweepRunDirs(configDir, activeRunIds);
  if (swept.length > 0) log.warn({ run_ids: swept }, "removed run directories (config files, Sandcastle's logs) left by runs that are no longer active");

  const childPath = deps.secretSource.PATH ?? "/usr/local/bin:/usr/bin:/bin";
  const childHome = deps.secretSource.HOME ?? "/tmp";
  const deployment = deploymentLabel(prefix, deps.target);
  const containers = RunContainers.forEngines({ containerCli: config.SANDCASTLE_CONTAINER_CLI ?? null, engineEnv: config.engineEnv, path: childPath, home: childHome }, deployment);
  const containerSweep = await containers.sweep(activeRunIds).catch((err: Error) => {
    log.warn({ err: err.message }, "could not remove containers left by runs that are no longer active");
    return { removed: [] as string[], unreachable: [] as string[] };
  });
  if (containerSweep.removed.length > 0) log.warn({ run_ids: containerSweep.removed }, "removed containers left by runs that are no longer active");
  if (containerSweep.unreachable.length > 0) log.debug({ engines: containerSweep.unreachable }, "container engines not asked for leftovers");
  const sandboxSettings: SandboxSettings = {
    default_image: config.SANDCASTLE_IMAGE,
    container_cli: config.SANDCASTLE_CONTAINER_CLI ?? null,
    engine_env: { ...config.engineEnv },
    limits: { memory: config.SANDCASTLE_CONTAINER_MEMORY, cpus: config.SANDCASTLE_CONTAINER_CPUS, pids: config.SANDCASTLE_CONTAINER_PIDS },
    deployment,
    providers_dir: config.SANDCASTLE_PROVIDERS_DIR ?? null,
  };

  const retention = new RunRetention({ runsDir: config.runsDir, windowMs: config.SANDBOX_RETENTION_HOURS * 3_600_000, defaultImage: config.SANDCASTLE_IMAGE, log });
  /** Retention is best-effort: the run's outcome stands whatever happens to its copy. */
  const retain = async (request: SandcastleRunRequest, result: SandcastleRunResult, declaredLost = false) => {
    const kept = await (declaredLost ? retention.keepLost(result.run_id, request, result) : retention.keep(result.run_id, request, result)).catch((err: Error) => {
      log.warn({ run_id: result.run_id, err: err.message }, "could not retain the run's workspace");
      return null;
    });
    if (kept !== null) await scheduleReap(deps.queues.sandboxRetention, { run_id: result.run_id }, kept.expiresAt).catch((err: Error) => log.warn({ run_id: result.run_id, err: err.message }, "could not schedule the retained workspace's reap; the next worker start will"));
  };

  const runner: RunnerDeps = {
    sandcastleEnabled: config.sandcastleEnabled,
    child: childCommand(config.SANDCASTLE_BIN),
    configDir,
    envManifestDir: config.ENV_MANIFEST_DIR,
    runsDir: config.runsDir,
    secretSource: deps.secretSource,
    childPath,
    childHome,
    killSwitch: deps.killSwitch,
    slots,
    audit: deps.audit,
    log,
    sandboxSettings,
    containers,
  };

  /** A marker in the session's log (after the run's lines: same connection, in order); best-effort. */
  const mark = async (sessionId: string, marker: RunMarker) => {
    await logWriter.command(markerCommand(sessionLogKey(prefix, sessionId), marker)).catch((err: Error) => log.warn({ run_id: marker.run_id, err: err.message }, "could not write a run marker to the session log"));
  };
  const ended = (result: SandcastleRunResult): RunMarker => ({ event: "ended", run_id: result.run_id, status: result.status, failure_reason: result.failure_reason, skip_reason: result.skip_reason });

  const processor = async (job: Job, token?: string) => {
    if (job.name !== RUN_JOB) throw new UnrecoverableError(`unknown sandcastle-run job name "${job.name}": this worker runs "${RUN_JOB}" jobs only`);
    const parsed = SandcastleRunRequest.safeParse(job.data);
    if (!parsed.success) throw new UnrecoverableError(`invalid sandcastle-run request: ${formatIssues(parsed.error)}`);
    const runId = String(job.id);
    const request = parsed.data;
    const jlog = jobLogger(log, { queue: SANDCASTLE_RUN_QUEUE, jobId: runId, sessionId: request.session_id });
    // Progress is for watchers (Bull Board, --wait, the API): losing an update must not fail the run.
    const phase = (p: Parameters<typeof runProgress>[0]) => job.updateProgress(runProgress(p)).catch(() => {});
    const signal = control.register(runId);
    let result: SandcastleRunResult;
    try {
      result = await runSandcastle(
        {
          runId,
          request,
          signal,
          sinks: [sessionLogSink(logWriter, sessionLogKey(prefix, request.session_id), config.SESSION_LOG_MAX_MB * 2 ** 20), budgetedJobLogSink((text) => job.log(text), request.session_id), retention.logSink(runId)],
          onSpawn: (pid) => jlog.info({ pid }, "run child started"),
          onPhase: (p) => {
            void phase(p);
            // At the spawn, before the child can print: the appender sends in call order, so it precedes every line.
            if (p === "running") void mark(request.session_id, { event: "started", run_id: runId });
          },
        },
        runner,
      );
    } catch (err) {
      if (err instanceof CapacityFullError && token) {
        await phase("queued");
        await job.moveToDelayed(Date.now() + CAPACITY_RETRY_MS, token);
        throw new DelayedError();
      }
      await retention.discard(runId).catch(() => {});
      throw err;
    } finally {
      control.unregister(runId);
    }
    jlog.info({ status: result.status, failure_reason: result.failure_reason, skip_reason: result.skip_reason }, "run finished");
    await phase("done");
    await mark(request.session_id, ended(result));
    await retain(request, result);
    if (result.status === "ok") return result;
    // A run that did not end ok is a failed job (ADR 0010): the result waits beside it for --wait and the API.
    await storeRunResult(deps.redis, deps.queues.sandcastleRun, result);
    const failure = new UnrecoverableError(failedRunReason(result));
    // The board shows the stack: our processor's frames say nothing about why a run failed.
    failure.stack = `${failure.name}: ${failure.message}`;
    throw failure;
  };

  return {
    name: SANDCASTLE_RUN_QUEUE,
    processor,
    concurrency: config.MAX_CONCURRENT_SANDCASTLE_RUNS,
    // An agent run is not idempotent: a stalled run is failed (worker_lost), never silently re-run (ADR 0003).
    options: { maxStalledCount: 0 },
    attach(worker) {
      worker.on("lockRenewalFailed", (jobIds: string[]) => {
        for (const id of jobIds) control.stop(id, { reason: "worker_lost" });
      });
      worker.on("failed", (job, err) => {
        if (!job || err.message !== STALLED_REASON) return;
        const runId = String(job.id);
        const request = SandcastleRunRequest.safeParse(job.data);
        const lost = lostRunResult(runId, request.success ? request.data.branch : "");
        void Promise.all([
          deps.audit.emit({ type: "sandcastle_run_failed", run_id: runId, failure_reason: "worker_lost", exit_code: null }),
          // The lost run's directory, and any other left by a run no longer active: whatever their age.
          removeRunDir(configDir, runId).then(() => sweepRunDirs(configDir, activeRunIds)),
          // Kept once its containers are gone, so nothing of the run still writes to its worktree.
          containers.removeRun(runId).then(() => (request.success ? retain(request.data, lost, true) : undefined)),
          slots.release(runId),
          storeRunResult(deps.redis, deps.queues.sandcastleRun, lost),
          request.success ? mark(request.data.session_id, ended(lost)) : null,
        ]).catch((e: Error) => log.error({ run_id: runId, err: e.message }, "could not record a lost run"));
      });
    },
    onGraceExpired: () => control.stopAll({ reason: "worker_shutdown" }),
    close: async () => {
      await control.close();
      logWriter.close();
    },
  };
}
