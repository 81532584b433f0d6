// Starts one BullMQ Worker per queue and stops them with a bounded grace.
import { Worker } from "bullmq";
import { workerName } from "../queues/index.js";
import { AuditLog } from "../src/audit/audit-log.js";
import { createRedactor } from "../src/redact/index.js";
import { bullConnection } from "../src/redis/connect.js";
import type { QueueWorkerSpec, WorkerDeps } from "./deps.js";
import { createMargotIntentWorker } from "./margot-intent.js";
import { createSandboxRetentionWorker } from "./sandbox-retention.js";
import { createSandcastleRunWorker } from "./sandcastle-run.js";

export type { WorkerDeps };

/** The worker deps minus what startWorkers makes itself; the secret source defaults to process.env. */
export type StartWorkersInput = Omit<WorkerDeps, "audit" | "secretSource"> & { readonly secretSource?: NodeJS.ProcessEnv };

export interface RunningWorkers {
  readonly workers: readonly Worker[];
  /** Stop taking jobs, let active ones finish for up to `graceMs`, then stop them and close. */
  close(graceMs: number): Promise<void>;
}

/** After the grace, stopped work gets this long to record its outcome before workers are force-closed. */
const STOP_SETTLE_MS = 8000;

/**
 * How long stopping the workers may take beyond the grace: the settle time, then a margin. A supervisor's wait before
 * SIGKILL (compose's stop_grace_period, systemd's TimeoutStopSec) must be at least the grace plus this.
 */
export const WORKERS_STOP_MARGIN_MS = 15_000;

export async function startWorkers(input: StartWorkersInput): Promise<RunningWorkers> {
  const { config, target, log } = input;
  const bull = bullConnection(target);
  const connection = bull.connection;
  const prefix = config.SCQ_KEY_PREFIX;
  const audit = new AuditLog(config.AUDIT_LOG_PATH, createRedactor());
  const deps: WorkerDeps = { ...input, audit, secretSource: input.secretSource ?? process.env };

  // The cap is global: BullMQ enforces it across every worker process on this Redis.
  await input.queues.sandcastleRun.setGlobalConcurrency(config.MAX_CONCURRENT_SANDCASTLE_RUNS);

  const specs: QueueWorkerSpec[] = [await createSandcastleRunWorker(deps), await createMargotIntentWorker(deps), await createSandboxRetentionWorker(deps)];

  const workers = specs.map((spec) => {
    const worker = new Worker(spec.name, spec.processor, {
      connection,
      prefix,
      concurrency: spec.concurrency,
      // `health --worker` finds this host's workers by this name.
      name: workerName(),
      autorun: false,
      lockDuration: config.SCQ_LOCK_DURATION_MS,
      stalledInterval: config.SCQ_STALLED_INTERVAL_MS,
      ...spec.options,
    });
    const wlog = log.child({ queue: spec.name });
    worker.on("failed", (job, err) => wlog.warn({ job_id: job?.id, job_name: job?.name, reason: err.message }, "job failed"));
    worker.on("completed", (job) => wlog.info({ job_id: job.id, job_name: job.name }, "job completed"));
    worker.on("error", (err) => wlog.error({ err: err.message }, "worker error"));
    spec.attach?.(worker);
    void worker.run();
    return worker;
  });
  await Promise.all(workers.map((w) => w.waitUntilReady()));
  log.info({ queues: specs.map((s) => s.name) }, "workers started");

  return {
    workers,
    close: async (graceMs: number) => {
      const graceful = Promise.all(workers.map((w) => w.close()));
      let finished = await Promise.race([graceful.then(() => true), sleep(graceMs).then(() => false)]);
      if (!finished) {
        log.warn({ grace_ms: graceMs }, "active jobs did not finish within the grace period; stopping them");
        for (const spec of specs) spec.onGraceExpired?.();
        finished = await Promise.race([graceful.then(() => true), sleep(STOP_SETTLE_MS).then(() => false)]);
        if (!finished) await Promise.all(workers.map((w) => w.close(true)));
      }
      await Promise.allSettled(specs.map((s) => s.close?.()));
      await audit.close();
      await bull.close();
      log.info("workers stopped");
    },
  };
}

const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms).unref());
