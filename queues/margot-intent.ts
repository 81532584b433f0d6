// The margot-intent queue: research completions in; reactions and drafts' timers as jobs.
// Timers are delayed jobs with deterministic ids, so scheduling one twice is one job:
//   draft-expire      expire-<draft id>-<generation>     the draft's expiry clock (a new one per resurface)
//   draft-resurface   resurface-<draft id>-<generation>  a deferred draft comes back
//   rate-limit-release release-<draft id>               a rate-limited draft tries for a slot again
import type { JobsOptions, Queue } from "bullmq";
import { z } from "zod";
import { parseInput } from "../src/invalid-input.js";
import { MargotActionAccepted, MargotIntentResult, MargotResearchCompletion } from "../src/margot/contract.js";
import { REACTIONS } from "../src/review/reactions.js";
import { KEEP_COMPLETED, KEEP_FAILED } from "./job-retention.js";

export { MargotActionAccepted, MargotIntentResult, MargotResearchCompletion };

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

/** Draft ids are ours (`d-` + 12 hex); anything that could break a job id or a Redis key is refused. */
export const DraftId = z
  .string({ error: "draft_id must be a string" })
  .regex(/^[A-Za-z0-9_-]{1,64}$/, { error: "draft_id takes 1-64 characters A-Z a-z 0-9 _ -" })
  .refine((id) => !/^\d+$/.test(id), { error: "draft_id must not be all digits" });

export const DraftReactionJob = z
  .object({
    draft_id: DraftId,
    reaction: z.enum(REACTIONS, { error: "reaction takes approve, reject or defer" }),
    reason: z.string().max(500, { error: "reason takes at most 500 characters" }).nullable().default(null),
    /** Who reacted: telegram:<user id> or cli:<user>@<host>. */
    actor: z.string().min(1).max(200),
    source: z.enum(["telegram", "cli"]),
    update_id: z.number().int().nonnegative().optional(),
  })
  .strict();
export type DraftReactionJob = z.infer<typeof DraftReactionJob>;

export const DraftTimerJob = z.object({ draft_id: DraftId, generation: z.number().int().nonnegative() }).strict();
export type DraftTimerJob = z.infer<typeof DraftTimerJob>;

export const RateLimitReleaseJob = z.object({ draft_id: DraftId }).strict();
export type RateLimitReleaseJob = z.infer<typeof RateLimitReleaseJob>;

/** The same interaction enqueued twice is one job: the id is derived from the interaction id. */
export function researchJobId(interactionId: string): string {
  return `intent-${interactionId}`;
}

export const expireJobId = (draftId: string, generation: number) => `expire-${draftId}-${generation}`;
export const resurfaceJobId = (draftId: string, generation: number) => `resurface-${draftId}-${generation}`;
export const releaseJobId = (draftId: string) => `release-${draftId}`;

export async function enqueueResearchCompletion(queue: Queue, input: unknown): Promise<{ jobId: string; completion: MargotResearchCompletion }> {
  const completion = parseInput(MargotResearchCompletion, input, "margot-intent completion");
  const jobId = researchJobId(completion.interaction_id);
  // A finished job would answer with its first decision (e.g. drafted, though the draft was
  // rejected since): remove it, so a new job answers `duplicate` with the interaction's state now.
  const previous = await queue.getJob(jobId);
  if (previous && (await previous.getState()) === "completed") await previous.remove().catch(() => undefined);
  await queue.add(MARGOT_JOBS.researchCompleted, completion, { ...MARGOT_JOB_OPTIONS, jobId });
  return { jobId, completion };
}

/**
 * A reaction to apply. `jobId`: `react-tg-<update_id>` for Telegram (a redelivered update is the
 * same job), a fresh `react-cli-<uuid>` for the CLI.
 */
export async function enqueueReaction(queue: Queue, input: unknown, jobId: string): Promise<{ jobId: string; reaction: DraftReactionJob }> {
  const reaction = parseInput(DraftReactionJob, input, "draft reaction");
  await queue.add(MARGOT_JOBS.draftReaction, reaction, { ...MARGOT_JOB_OPTIONS, jobId });
  return { jobId, reaction };
}

const delayUntil = (atMs: number) => Math.max(0, Math.round(atMs - Date.now()));

export async function scheduleDraftExpire(queue: Queue, draftId: string, generation: number, atMs: number): Promise<void> {
  const data: DraftTimerJob = { draft_id: draftId, generation };
  await queue.add(MARGOT_JOBS.draftExpire, data, { ...MARGOT_JOB_OPTIONS, jobId: expireJobId(draftId, generation), delay: delayUntil(atMs) });
}

/** Removes a pending expiry; 0 when it already ran, runs now, or never existed (its processor checks the draft anyway). */
export async function cancelDraftExpire(queue: Queue, draftId: string, generation: number): Promise<number> {
  return queue.remove(expireJobId(draftId, generation));
}

export async function scheduleDraftResurface(queue: Queue, draftId: string, generation: number, atMs: number): Promise<void> {
  const data: DraftTimerJob = { draft_id: draftId, generation };
  await queue.add(MARGOT_JOBS.draftResurface, data, { ...MARGOT_JOB_OPTIONS, jobId: resurfaceJobId(draftId, generation), delay: delayUntil(atMs) });
}

/** A draft or approval held by the kill switch looks again at `atMs` (a fresh job id per hold). */
export async function scheduleHoldRelease(queue: Queue, draftId: string, atMs: number): Promise<void> {
  const data: RateLimitReleaseJob = { draft_id: draftId };
  await queue.add(MARGOT_JOBS.rateLimitRelease, data, { ...MARGOT_JOB_OPTIONS, jobId: `hold-${draftId}-${atMs}`, delay: delayUntil(atMs) });
}

export async function scheduleRateLimitRelease(queue: Queue, draftId: string, atMs: number): Promise<void> {
  const data: RateLimitReleaseJob = { draft_id: draftId };
  await queue.add(MARGOT_JOBS.rateLimitRelease, data, { ...MARGOT_JOB_OPTIONS, jobId: releaseJobId(draftId), delay: delayUntil(atMs) });
}
