// `enqueue <queue> --request|--completion FILE|- [--wait]`: validate, enqueue, optionally wait for the result.
import { QueueEvents, type ConnectionOptions, type Job } from "bullmq";
import {
  enqueueResearchCompletion,
  enqueueRun,
  MARGOT_INTENT_QUEUE,
  SANDCASTLE_RUN_QUEUE,
} from "../../../queues/index.js";
import { AuditLog } from "../../audit/audit-log.js";
import { AppError } from "../../errors.js";
import { createRedactor } from "../../redact/index.js";
import { RunSlots } from "../../sandcastle/run-slots.js";
import { redisOptions } from "../../redis/target.js";
import { readJsonSource } from "../input.js";
import type { Runtime } from "../runtime.js";

export interface EnqueueOptions {
  request?: string;
  completion?: string;
  wait?: boolean;
  waitTimeout?: number;
}

export async function enqueueCommand(rt: Runtime, queueName: string, opts: EnqueueOptions): Promise<number> {
  let jobId: string;
  let queue;
  if (queueName === SANDCASTLE_RUN_QUEUE) {
    if (!opts.request) throw new AppError("invalid_input", "enqueue sandcastle-run needs --request FILE (or - for stdin)");
    const input = await readJsonSource(opts.request, "the sandcastle-run request");
    queue = rt.queues.sandcastleRun;
    const audit = new AuditLog(rt.config.AUDIT_LOG_PATH, createRedactor());
    rt.shutdown.add("audit log", () => audit.close());
    const slots = new RunSlots(rt.redis, rt.config.SCQ_KEY_PREFIX, rt.config.MAX_CONCURRENT_SANDCASTLE_RUNS);
    const outcome = await enqueueRun(queue, input, { envManifestDir: rt.config.ENV_MANIFEST_DIR, ...(rt.config.SANDCASTLE_PROVIDERS_DIR ? { providersDir: rt.config.SANDCASTLE_PROVIDERS_DIR } : {}), slots, audit });
    if (outcome.skipped !== null) {
      // Nothing was enqueued; the result is already known.
      process.stdout.write(`${JSON.stringify(outcome.skipped)}\n`);
      return 0;
    }
    jobId = outcome.runId;
  } else if (queueName === MARGOT_INTENT_QUEUE) {
    if (!opts.completion) throw new AppError("invalid_input", "enqueue margot-intent needs --completion FILE (or - for stdin)");
    const input = await readJsonSource(opts.completion, "the margot research completion");
    queue = rt.queues.margotIntent;
    jobId = (await enqueueResearchCompletion(queue, input)).jobId;
  } else {
    throw new AppError("invalid_input", `unknown queue "${queueName}": enqueue takes ${SANDCASTLE_RUN_QUEUE} or ${MARGOT_INTENT_QUEUE}`);
  }
  process.stdout.write(`${JSON.stringify({ queue: queueName, job_id: jobId })}\n`);
  if (!opts.wait) return 0;

  const events = new QueueEvents(queueName, {
    connection: redisOptions(rt.site.target, "worker") as ConnectionOptions,
    prefix: rt.config.SCQ_KEY_PREFIX,
  });
  rt.shutdown.add("queue events", () => events.close());
  await events.waitUntilReady();
  const job = (await queue.getJob(jobId)) as Job | undefined;
  if (job === undefined) throw new AppError("invalid_input", `job ${jobId} vanished before it could be awaited`);
  try {
    const result: unknown = await job.waitUntilFinished(events, opts.waitTimeout !== undefined ? opts.waitTimeout * 1000 : undefined);
    process.stdout.write(`${JSON.stringify(result)}\n`);
    return 0;
  } catch (err) {
    process.stderr.write(`sandcastle-queue: job ${jobId} failed: ${(err as Error).message}\n`);
    return 1;
  }
}
