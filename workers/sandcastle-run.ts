// Thin processor for sandcastle-run: validate the payload, run it through src/sandcastle, map the outcome to BullMQ.
import { DelayedError, UnrecoverableError, type Job } from "bullmq";
import {
  failedRunReason, lostRunResult, RUN_JOB, runProgress, runsDeployment, SANDCASTLE_RUN_QUEUE, SandcastleRunRequest, scheduleReap, STALLED_REASON,
  storeRunResult,
} from "../queues/index.js";
import { formatIssues, parseWithWording } from "../src/invalid-input.js";
import { jobLogger } from "../src/log.js";
import { createRedisClient } from "../src/redis/connect.js";
import { StreamAppender } from "../src/redis/stream-appender.js";
import { childCommand } from "../src/sandcastle/worker/child-command.js";
import { ChildSpare, sweepSpareDirs } from "../src/sandcastle/worker/child-spare.js";
import { resolveConfigDir, sweepRunDirs } from "../src/sandcastle/worker/run-dir.js";
import { RunEnd } from "../src/sandcastle/worker/run-end.js";
import { RunContainers } from "../src/sandcastle/containers/run-containers.js";
import type { SandboxSettings, SandcastleRunResult } from "../src/sandcastle/contract.js";
import { RunControl } from "../src/sandcastle/worker/run-control.js";
import { RunRetention } from "../src/sandcastle/retention/run-retention.js";
import { RunSlots } from "../src/sandcastle/worker/run-slots.js";
import { CapacityFullError, runSandcastle, type RunnerDeps } from "../src/sandcastle/worker/runner.js";
import { budgetedJobLogSink, sessionLogKey, sessionLogSink } from "../src/session-log/session-log.js";
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
  // SANDCASTLE_CONFIG_DIR and RUNS_DIR may be shared with other deployments: only this one's are ever swept (ADR 0044).
  const own = runsDeployment(deps.queues.sandcastleRun, prefix, deps.target);
  const deployment = own.label;
  const swept = await sweepRunDirs(configDir, own, activeRunIds);
  if (swept.length > 0) log.warn({ run_ids: swept }, "removed run directories (config files, Sandcastle's logs) left by runs that are no longer active");
  const spareDirs = await sweepSpareDirs({ configDir, runsDir: config.runsDir, deployment }).catch(() => 0);
  if (spareDirs > 0) log.warn({ count: spareDirs }, "removed spare directories left by workers that are gone");

  const childPath = deps.secretSource.PATH ?? "/usr/local/bin:/usr/bin:/bin";
  const childHome = deps.secretSource.HOME ?? "/tmp";
  const containers = RunContainers.forEngines(
    { containerCli: config.SANDCASTLE_CONTAINER_CLI ?? null, engineEnv: config.engineEnv, path: childPath, home: childHome },
    deployment,
  );
  const containerSweep = await containers.sweep(activeRunIds).catch((err: Error) => {
    log.warn({ err: err.message }, "could not remove containers left by runs that are no longer active");
    return { removed: [] as string[], unreachable: [] as string[] };
  });
  if (containerSweep.removed.length > 0) log.warn({ run_ids: containerSweep.removed }, "removed containers left by runs that are no longer active");
  if (containerSweep.unreachable.length > 0) log.debug({ engines: containerSweep.unreachable }, "container engines not asked for leftovers");
  const spareHome = { configDir, runsDir: config.runsDir, deployment, removeContainers: (spareId: string) => containers.removeRun(spareId) };
  const sandboxSettings: SandboxSettings = {
    default_image: config.SANDCASTLE_IMAGE,
    container_cli: config.SANDCASTLE_CONTAINER_CLI ?? null,
    engine_env: { ...config.engineEnv },
    limits: { memory: config.SANDCASTLE_CONTAINER_MEMORY, cpus: config.SANDCASTLE_CONTAINER_CPUS, pids: config.SANDCASTLE_CONTAINER_PIDS },
    deployment,
    providers_dir: config.SANDCASTLE_PROVIDERS_DIR ?? null,
    network: config.SANDCASTLE_CONTAINER_NETWORK ?? null,
    agent_idle_seconds: config.SANDCASTLE_AGENT_IDLE_SECONDS,
  };

  const child = childCommand(config.SANDCASTLE_BIN);
  // Only the built-in child can wait for its run; SANDCASTLE_BIN's program is started for each run.
  const spare =
    config.SANDCASTLE_BIN === undefined && config.sandcastleEnabled
      ? new ChildSpare(child, { PATH: childPath, HOME: childHome, NODE_NO_WARNINGS: "1" }, config.SANDCASTLE_WARM_CONTAINER === "1" ? spareHome : undefined)
      : undefined;
  const retention = new RunRetention({
    runsDir: config.runsDir,
    windowMs: config.SANDBOX_RETENTION_HOURS * 3_600_000,
    defaultImage: config.SANDCASTLE_IMAGE,
    deployment,
    log,
    scheduleReap: (runId, at) => scheduleReap(deps.queues.sandboxRetention, { run_id: runId }, at),
  });
  const runEnd = new RunEnd({
    configDir,
    slots,
    containers,
    retention,
    audit: deps.audit,
    log,
    logWriter,
    prefix,
    storeResult: (result) => storeRunResult(deps.redis, deps.queues.sandcastleRun, result),
    // The lost run's directory, and any other left by a run no longer active: whatever their age.
    sweepRunDirs: () => sweepRunDirs(configDir, own, activeRunIds),
    ...(spare !== undefined ? { spare } : {}),
  });
  spare?.refill();
  const runner: RunnerDeps = {
    sandcastleEnabled: config.sandcastleEnabled,
    child,
    configDir,
    deployment,
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
    ...(spare !== undefined ? { spare } : {}),
    ...(config.SANDCASTLE_TOKEN_BUDGET !== undefined ? { tokenBudget: config.SANDCASTLE_TOKEN_BUDGET } : {}),
    egress: {
      allow: config.SANDCASTLE_EGRESS_ALLOW,
      permit: config.egressPermit,
      hosts: config.egressHosts,
      open: config.SANDCASTLE_EGRESS_OPEN === "1",
      network: config.SANDCASTLE_CONTAINER_NETWORK ?? null,
    },
  };

  const processor = async (job: Job, token?: string) => {
    if (job.name !== RUN_JOB) throw new UnrecoverableError(`unknown sandcastle-run job name "${job.name}": this worker runs "${RUN_JOB}" jobs only`);
    const parsed = parseWithWording(SandcastleRunRequest, job.data);
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
          sinks: [
            sessionLogSink(logWriter, sessionLogKey(prefix, request.session_id), config.SESSION_LOG_MAX_MB * 2 ** 20),
            budgetedJobLogSink((text) => job.log(text), request.session_id),
            retention.logSink(runId),
          ],
          // `pid` is the process's own field on every line: the child's is `child_pid`.
          onSpawn: (pid) => jlog.info({ child_pid: pid }, "run child started"),
          onPhase: (p) => {
            void phase(p);
            // At the spawn, before the child can print: the appender sends in call order, so it precedes every line.
            if (p === "running") void runEnd.mark(request.session_id, { event: "started", run_id: runId });
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
      await runEnd.abandoned(runId);
      throw err;
    } finally {
      control.unregister(runId);
    }
    jlog.info({ status: result.status, failure_reason: result.failure_reason, skip_reason: result.skip_reason }, "run finished");
    await phase("done");
    // A run that did not end ok is a failed job (ADR 0010): its result waits beside it for --wait and the API.
    await runEnd.ended(request, result);
    if (result.status === "ok") return result;
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
      // A run's result is readable once its job has completed or failed: what waited for that starts (RunEnd).
      worker.on("completed", (job) => runEnd.resultReadable(String(job.id)));
      worker.on("failed", (job) => {
        if (job) runEnd.resultReadable(String(job.id));
      });
      worker.on("lockRenewalFailed", (jobIds: string[]) => {
        for (const id of jobIds) control.stop(id, { reason: "worker_lost" });
      });
      worker.on("failed", (job, err) => {
        if (!job || err.message !== STALLED_REASON) return;
        const runId = String(job.id);
        const request = SandcastleRunRequest.safeParse(job.data);
        void runEnd.lost(runId, request.success ? request.data : undefined, lostRunResult(runId, request.success ? request.data.branch : ""));
      });
    },
    onGraceExpired: () => control.stopAll({ reason: "worker_shutdown" }),
    close: async () => {
      await runEnd.settled();
      await spare?.close();
      await control.close();
      logWriter.close();
    },
  };
}
