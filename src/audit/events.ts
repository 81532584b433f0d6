// The closed set of audit events (the seeds' names), each with its fields. Names and counts only, never values.
import { z } from "zod";
import { FAILURE_REASONS, SKIP_REASONS } from "../sandcastle/contract.js";

const runId = z.string().min(1);

export const AuditEvent = z.discriminatedUnion("type", [
  z.object({ type: z.literal("sandcastle_run_started"), run_id: runId, agent: z.string(), sandbox: z.string(), branch: z.string() }).strict(),
  z.object({ type: z.literal("sandcastle_env_resolved"), run_id: runId, var_count: z.number().int().nonnegative(), project_slug: z.string() }).strict(),
  z.object({ type: z.literal("sandcastle_run_ok"), run_id: runId, duration_s: z.number().nonnegative(), commits_count: z.number().int().nonnegative() }).strict(),
  z
    .object({
      type: z.literal("sandcastle_run_failed"),
      run_id: runId,
      failure_reason: z.enum(FAILURE_REASONS),
      exit_code: z.number().int().nullable(),
      /** Who asked, for cancels ("cli:alice@pid123"). */
      requested_by: z.string().optional(),
      missing_vars: z.array(z.string()).optional(),
    })
    .strict(),
  /** Beyond the seed: a skip is a decision an operator wants to find later. */
  z.object({ type: z.literal("sandcastle_run_skipped"), run_id: runId, skip_reason: z.enum(SKIP_REASONS) }).strict(),
  z.object({ type: z.literal("margot_intent_classified"), interaction_id: z.string(), classification: z.string(), confidence: z.number() }).passthrough(),
  z.object({ type: z.literal("margot_intent_drafted"), interaction_id: z.string(), draft_id: z.string() }).passthrough(),
  z.object({ type: z.literal("margot_intent_accepted"), interaction_id: z.string(), draft_id: z.string(), linear_issue_id: z.string() }).passthrough(),
  z.object({ type: z.literal("margot_intent_rejected"), interaction_id: z.string() }).passthrough(),
  z.object({ type: z.literal("margot_intent_expired"), interaction_id: z.string(), draft_id: z.string() }).passthrough(),
]);
export type AuditEvent = z.infer<typeof AuditEvent>;
export type AuditEventType = AuditEvent["type"];
