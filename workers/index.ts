// Starts one BullMQ Worker per queue and stops them with a bounded grace.
import { Worker, type ConnectionOptions, type Processor } from "bullmq";
import { redisOptions } from "../src/redis/target.js";
import { MARGOT_INTENT_QUEUE, SANDBOX_RETENTION_QUEUE, SANDCASTLE_RUN_QUEUE } from "../queues/index.js";
import { processSandboxRetention } from "./sandbox-retention.js";
import { createMargotIntentProcessor } from "./margot-intent.js";
import { createSandcastleRunProcessor } from "./sandcastle-run.js";

import type { WorkerDeps } from "./deps.js";

export type { WorkerDeps };

export interface RunningWorkers {
  readonly workers: readonly Worker[];
  /** Stop taking jobs, let active ones finish for up to `graceMs`, then force-close. */
  close(graceMs: number): Promise<void>;
}

export async function startWorkers(deps: WorkerDeps): Promise<RunningWorkers> {
  const { config, target, log } = deps;
  // ioredis options are what BullMQ documents; its own type is looser than ioredis'.
  const connection = redisOptions(target, "worker") as ConnectionOptions;
  const prefix = config.SCQ_KEY_PREFIX;

  // The cap is global: BullMQ enforces it across every worker process on this Redis.
  await deps.queues.sandcastleRun.setGlobalConcurrency(config.MAX_CONCURRENT_SANDCASTLE_RUNS);

  const specs: Array<{ name: string; processor: Processor; concurrency: number }> = [
    { name: SANDCASTLE_RUN_QUEUE, processor: await createSandcastleRunProcessor(deps), concurrency: config.MAX_CONCURRENT_SANDCASTLE_RUNS },
    { name: MARGOT_INTENT_QUEUE, processor: await createMargotIntentProcessor(deps), concurrency: 4 },
    { name: SANDBOX_RETENTION_QUEUE, processor: processSandboxRetention, concurrency: 1 },
  ];

  const workers = specs.map(({ name, processor, concurrency }) => {
    const worker = new Worker(name, processor, { connection, prefix, concurrency, autorun: false });
    const wlog = log.child({ queue: name });
    worker.on("failed", (job, err) => wlog.warn({ job_id: job?.id, job_name: job?.name, reason: err.message }, "job failed"));
    worker.on("completed", (job) => wlog.info({ job_id: job.id, job_name: job.name }, "job completed"));
    worker.on("error", (err) => wlog.error({ err: { message: err.message } }, "worker error"));
    void worker.run();
    return worker;
  });
  await Promise.all(workers.map((w) => w.waitUntilReady()));
  log.info({ queues: specs.map((s) => s.name) }, "workers started");

  return {
    workers,
    close: async (graceMs: number) => {
      const graceful = Promise.all(workers.map((w) => w.close()));
      const finished = await Promise.race([graceful.then(() => true), sleep(graceMs).then(() => false)]);
      if (!finished) {
        log.warn({ grace_ms: graceMs }, "active jobs did not finish within the grace period; closing workers now");
        await Promise.all(workers.map((w) => w.close(true)));
      }
      log.info("workers stopped");
    },
  };
}

const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms).unref());
