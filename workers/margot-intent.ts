// Thin processor for margot-intent: validate the payload, then hand it to src/margot and src/review.
import { UnrecoverableError } from "bullmq";
import { formatIssues } from "../src/invalid-input.js";
import { MARGOT_INTENT_QUEUE, MARGOT_JOBS, MargotResearchCompletion } from "../queues/index.js";
import type { QueueWorkerSpec, WorkerDeps } from "./deps.js";
import { notImplemented } from "./placeholder.js";

export async function createMargotIntentWorker(_deps: WorkerDeps): Promise<QueueWorkerSpec> {
  const pending = notImplemented(MARGOT_INTENT_QUEUE);
  return {
    name: MARGOT_INTENT_QUEUE,
    concurrency: 4,
    processor: async (job) => {
      if (job.name === MARGOT_JOBS.researchCompleted) {
        const parsed = MargotResearchCompletion.safeParse(job.data);
        if (!parsed.success) throw new UnrecoverableError(`invalid margot-intent completion: ${formatIssues(parsed.error)}`);
      }
      return pending();
    },
  };
}
