// The sandbox-retention queue: a retained run workspace expires as a delayed `reap` job, one per run
// (job id `reap-<run_id>`). A pin moves that job (BullMQ's changeDelay, one atomic script), never adds a second.
import type { JobsOptions, Queue } from "bullmq";
import type { RedisClient } from "../src/redis/connect.js";
import { z } from "zod";
import { parseInput } from "../src/invalid-input.js";
import { RunId } from "../src/sandcastle/retention/retained-runs.js";
import { KEEP_COMPLETED, KEEP_FAILED } from "./job-retention.js";

export const SANDBOX_RETENTION_QUEUE = "sandbox-retention";
export const REAP_JOB = "reap";

/** Only the run id travels: the directory is derived from RUNS_DIR by the worker, never taken from job data. */
export const ReapPayload = z.object({ run_id: RunId }).strict();
export type ReapPayload = z.infer<typeof ReapPayload>;

export const ReapResult = z
  .object({
    run_id: z.string(),
    removed: z.boolean(),
    /** Why nothing was removed: the directory was already gone. */
    note: z.string().nullable(),
  })
  .strict();
export type ReapResult = z.infer<typeof ReapResult>;

export const REAP_JOB_OPTIONS: JobsOptions = {
  attempts: 3,
  backoff: { type: "exponential", delay: 5000 },
  removeOnComplete: KEEP_COMPLETED,
  removeOnFail: KEEP_FAILED,
};

export function reapJobId(runId: string): string {
  return `reap-${runId}`;
}

/**
 * The run's reap job is due at `at` (epoch ms): a delayed one is moved, anything else of that id (finished,
 * waiting) is replaced, none is added. Returns what it did.
 */
export async function scheduleReap(queue: Queue, input: unknown, at: number): Promise<"moved" | "added"> {
  const payload = parseInput(ReapPayload, input, "sandbox-retention payload");
  const jobId = reapJobId(payload.run_id);
  const delay = Math.max(0, at - Date.now());
  const existing = await queue.getJob(jobId);
  if (existing !== undefined && (await existing.isDelayed())) {
    try {
      await existing.changeDelay(delay);
      return "moved";
    } catch {
      // It became due meanwhile: the reap reads the expiry again and waits for the new time itself.
    }
  }
  // An active reap cannot be removed (locked); it reads the expiry again, as above.
  if (existing !== undefined) await existing.remove().catch(() => {});
  await queue.add(REAP_JOB, payload, { ...REAP_JOB_OPTIONS, jobId, delay });
  return "added";
}

/** When the run's reap job is due (epoch ms), or null when it is not delayed. */
export async function reapDueAt(redis: RedisClient, queue: Queue, runId: string): Promise<number | null> {
  const score = await redis.zscore(queue.toKey("delayed"), reapJobId(RunId.parse(runId)));
  // BullMQ scores a delayed job by its due time times 0x1000 plus a counter.
  return score === null ? null : Math.floor(Number(score) / 0x1000);
}
