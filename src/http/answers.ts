// What the HTTP API answers, as zod schemas: the handlers build these (their types come from here) and the
// OpenAPI document describes them (openapi.ts), so the two cannot drift. Requests and results that producers
// exchange live with their queues (queues/, src/<domain>/contract.ts); this is the HTTP envelope around them.
import { z } from "zod";
import { MARGOT_INTENT_QUEUE, QUEUE_NAMES, SANDBOX_RETENTION_QUEUE, SANDCASTLE_RUN_QUEUE } from "../../queues/index.js";
import { RUN_PHASES, RunProgress, SandcastleRunResult, SessionId } from "../sandcastle/contract.js";
import { RunId } from "../sandcastle/retention/retained-runs.js";

const isoTime = z.string().meta({ description: "ISO 8601 UTC time", format: "date-time" });

/** 201 to POST /v1/sandcastle-runs: the run's job, and where to follow it. */
export const RunEnqueued = z
  .object({
    queue: z.literal(SANDCASTLE_RUN_QUEUE),
    job_id: RunId,
    run_id: RunId,
    session_id: SessionId,
    links: z
      .object({
        job: z.string().meta({ description: "GET: the job (also the Location header)" }),
        logs: z.string().meta({ description: "GET: the run's live log (Server-Sent Events)" }),
        cancel: z.string().meta({ description: "POST: cancel the run" }),
      })
      .strict(),
  })
  .strict();
export type RunEnqueued = z.infer<typeof RunEnqueued>;

/** 200 to POST /v1/sandcastle-runs with on_capacity "skip" when no slot was free: nothing was enqueued. */
export const RunSkippedAtEnqueue = z.object({ queue: z.literal(SANDCASTLE_RUN_QUEUE), job_id: z.null(), result: SandcastleRunResult }).strict();
export type RunSkippedAtEnqueue = z.infer<typeof RunSkippedAtEnqueue>;

/** POST /v1/margot-intents: 201 with duplicate false; 200 with duplicate true when that interaction's job existed. */
export const IntentEnqueued = z
  .object({
    queue: z.literal(MARGOT_INTENT_QUEUE),
    job_id: z.string(),
    duplicate: z.boolean(),
    links: z.object({ job: z.string().meta({ description: "GET: the job (also the Location header of a 201)" }) }).strict(),
  })
  .strict();
export type IntentEnqueued = z.infer<typeof IntentEnqueued>;

/** A job's state as BullMQ reports it (an unknown job is a 404). */
export const JOB_STATES = ["waiting", "prioritized", "waiting-children", "delayed", "active", "completed", "failed"] as const;

const jobFields = {
  id: z.string(),
  name: z.string(),
  state: z.enum(JOB_STATES),
  failure: z.object({ reason: z.string().nullable() }).strict().nullable().meta({ description: "Failed jobs: BullMQ's failedReason" }),
  attempts_made: z.number().int().nonnegative(),
  created_at: isoTime,
  started_at: isoTime.nullable(),
  finished_at: isoTime.nullable(),
};

/** GET /v1/jobs/sandcastle-run/:id: a run's job, its phase, and its SandcastleRunResult once it has ended. */
export const RunJobView = z
  .object({
    queue: z.literal(SANDCASTLE_RUN_QUEUE),
    ...jobFields,
    phase: z.enum(RUN_PHASES),
    progress: RunProgress.nullable().meta({ description: "null until a worker reports a phase" }),
    result: SandcastleRunResult.nullable().meta({ description: "Once the run has ended (completed or failed job); null before" }),
  })
  .strict();
export type RunJobView = z.infer<typeof RunJobView>;

/** GET /v1/jobs/:queue/:id of the other queues: the job's return value once completed. */
export const OtherJobView = z
  .object({
    queue: z.enum([MARGOT_INTENT_QUEUE, SANDBOX_RETENTION_QUEUE]),
    ...jobFields,
    progress: z.unknown().meta({ description: "What the job reported, or null" }),
    result: z.unknown().meta({ description: "The job's return value once completed (a research-completed job: MargotIntentResult), else null" }),
  })
  .strict();
export type OtherJobView = z.infer<typeof OtherJobView>;

export const JobView = z.union([RunJobView, OtherJobView]);

export const Health = z.object({ ok: z.literal(true) }).strict();
export const Readiness = z.object({ ready: z.boolean(), message: z.string().optional() }).strict();

/** Path and query parameters, as the handlers check them. */
export const QueueName = z.enum(QUEUE_NAMES, { error: `takes one of ${QUEUE_NAMES.join(", ")}` });
