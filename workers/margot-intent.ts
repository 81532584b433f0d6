// Thin processor for margot-intent: validate the payload, then hand it to src/margot and src/review.
import { UnrecoverableError, type Processor } from "bullmq";
import { formatIssues } from "../src/invalid-input.js";
import { MARGOT_JOBS, MargotResearchCompletion } from "../queues/index.js";
import type { WorkerDeps } from "./deps.js";

export async function createMargotIntentProcessor(_deps: WorkerDeps): Promise<Processor> {
  return async (job) => {
    if (job.name === MARGOT_JOBS.researchCompleted) {
      const parsed = MargotResearchCompletion.safeParse(job.data);
      if (!parsed.success) throw new UnrecoverableError(`invalid margot-intent completion: ${formatIssues(parsed.error)}`);
    }
    throw new UnrecoverableError("not implemented: the margot-intent processor has not landed yet");
  };
}
