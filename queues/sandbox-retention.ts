// The sandbox-retention queue: a retained run workspace expires as a delayed `reap` job.
import { isAbsolute } from "node:path";
import type { JobsOptions, Queue } from "bullmq";
import { z } from "zod";
import { parseInput } from "../src/invalid-input.js";
import { KEEP_COMPLETED, KEEP_FAILED } from "./job-retention.js";

export const SANDBOX_RETENTION_QUEUE = "sandbox-retention";
export const REAP_JOB = "reap";

export const ReapPayload = z
  .object({
    run_id: z.string().regex(/^[A-Za-z0-9][A-Za-z0-9._-]{0,127}$/, "must be a run id"),
    workspace_path: z.string().refine((p) => isAbsolute(p), "must be an absolute path"),
  })
  .strict();
export type ReapPayload = z.infer<typeof ReapPayload>;

export const ReapResult = z.object({ run_id: z.string(), removed: z.boolean() }).strict();
export type ReapResult = z.infer<typeof ReapResult>;

export const REAP_JOB_OPTIONS: JobsOptions = { attempts: 3, backoff: { type: "exponential", delay: 5000 }, removeOnComplete: KEEP_COMPLETED, removeOnFail: KEEP_FAILED };

/** One reap job per run (job id `reap-<run_id>`), due when the retention window ends. */
export async function scheduleReap(queue: Queue, input: unknown, delayMs: number): Promise<void> {
  const payload = parseInput(ReapPayload, input, "sandbox-retention payload");
  await queue.add(REAP_JOB, payload, { ...REAP_JOB_OPTIONS, jobId: `reap-${payload.run_id}`, delay: Math.max(0, delayMs) });
}
