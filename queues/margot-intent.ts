// The margot-intent queue: research completions in; drafts, reactions and their timers as jobs.
import type { JobsOptions, Queue } from "bullmq";
import { parseInput } from "../src/invalid-input.js";
import { MargotIntentResult, MargotResearchCompletion } from "../src/margot/contract.js";
import { KEEP_COMPLETED, KEEP_FAILED } from "./job-retention.js";

export { MargotIntentResult, MargotResearchCompletion };

export const MARGOT_INTENT_QUEUE = "margot-intent";
export const MARGOT_JOBS = {
  researchCompleted: "research-completed",
  draftReaction: "draft-reaction",
  draftExpire: "draft-expire",
  draftResurface: "draft-resurface",
  rateLimitRelease: "rate-limit-release",
} as const;
export type MargotJobName = (typeof MARGOT_JOBS)[keyof typeof MARGOT_JOBS];

/** Classification and drafting are idempotent by interaction id, so a few retries are safe. */
export const MARGOT_JOB_OPTIONS: JobsOptions = {
  attempts: 5,
  backoff: { type: "exponential", delay: 2000 },
  removeOnComplete: KEEP_COMPLETED,
  removeOnFail: KEEP_FAILED,
};

/** The same interaction enqueued twice is one job: the id is derived from the interaction id. */
export function researchJobId(interactionId: string): string {
  return `intent-${interactionId}`;
}

export async function enqueueResearchCompletion(queue: Queue, input: unknown): Promise<{ jobId: string; completion: MargotResearchCompletion }> {
  const completion = parseInput(MargotResearchCompletion, input, "margot-intent completion");
  const jobId = researchJobId(completion.interaction_id);
  await queue.add(MARGOT_JOBS.researchCompleted, completion, { ...MARGOT_JOB_OPTIONS, jobId });
  return { jobId, completion };
}
