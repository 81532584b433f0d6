// The closed set of audit events (docs/contracts.md), each with its fields. Names and counts only, never values.
import { z } from "zod";
import { Classification, FAILURE_REASONS, IntentReason, IntentStatus, SKIP_REASONS } from "./vocabulary.js";

const runId = z.string().min(1);
const interactionId = z.string().min(1);
const draftId = z.string().min(1);
const count = z.number().int().nonnegative();
/** A run's token usage (the result's `usage`): counts, never content. */
const usage = z
  .object({ input_tokens: count, output_tokens: count, cache_read_input_tokens: count, cache_creation_input_tokens: count, turns: count })
  .strict()
  .nullable();

export const AuditEvent = z.discriminatedUnion("type", [
  z
    .object({
      type: z.literal("sandcastle_run_started"),
      run_id: runId,
      agent: z.string(),
      sandbox: z.string(),
      branch: z.string(),
      /** How a container run reaches the network: allowlist, none, open, or operator:<SANDCASTLE_CONTAINER_NETWORK> (ADR 0035). */
      egress: z.string().optional(),
    })
    .strict(),
  /** A connection the egress proxy refused: the host and port a run's container asked for (ADR 0035). */
  z.object({ type: z.literal("sandcastle_egress_denied"), run_id: runId, host: z.string(), port: z.number().int() }).strict(),
  z.object({ type: z.literal("sandcastle_env_resolved"), run_id: runId, var_count: z.number().int().nonnegative(), project_slug: z.string() }).strict(),
  z
    .object({
      type: z.literal("sandcastle_run_ok"),
      run_id: runId,
      duration_s: z.number().nonnegative(),
      commits_count: z.number().int().nonnegative(),
      usage: usage.optional(),
    })
    .strict(),
  z
    .object({
      type: z.literal("sandcastle_run_failed"),
      run_id: runId,
      failure_reason: z.enum(FAILURE_REASONS),
      exit_code: z.number().int().nullable(),
      /** Who asked, for cancels ("cli:alice@pid123"). */
      requested_by: z.string().optional(),
      missing_vars: z.array(z.string()).optional(),
      /** Tokens the run's agents had reported (null: none, as the script agent). */
      usage: usage.optional(),
    })
    .strict(),
  /** What a run's agent changed in its own repository beyond the run's branch, none of it taken (ADR 0033): names only. */
  z.object({ type: z.literal("sandcastle_changes_refused"), run_id: runId, changes: z.array(z.string()) }).strict(),
  /** A skip is a decision an operator wants to find later. */
  z.object({ type: z.literal("sandcastle_run_skipped"), run_id: runId, skip_reason: z.enum(SKIP_REASONS) }).strict(),
  // Margot: exactly the fields the bridge writes.
  z
    .object({
      type: z.literal("margot_intent_classified"),
      interaction_id: interactionId,
      classification: Classification,
      confidence: z.number().min(0).max(1),
      /** What the bridge did with it (drafted, queued_rate_limit, informational, suppressed, rejected). */
      status: IntentStatus,
      reason: IntentReason.nullable(),
    })
    .strict(),
  z
    .object({
      type: z.literal("margot_intent_drafted"),
      interaction_id: interactionId,
      draft_id: draftId,
      target_repo: z.string().nullable(),
      channel: z.enum(["telegram", "local"]),
    })
    .strict(),
  z
    .object({
      type: z.literal("margot_intent_accepted"),
      interaction_id: interactionId,
      draft_id: draftId,
      linear_issue_id: z.string().min(1),
      linear_issue_identifier: z.string().min(1),
      labels_applied: z.array(z.string()),
    })
    .strict(),
  z
    .object({
      type: z.literal("margot_intent_rejected"),
      interaction_id: interactionId,
      /** null when the rules rejected it before any draft (repo_not_allowed). */
      draft_id: draftId.nullable(),
      /** repo_not_allowed, or the founder's reason (PII-redacted), or founder_rejected when none was given. */
      reason: z.string().min(1).max(500),
      rejected_by: z.enum(["rules", "founder"]),
    })
    .strict(),
  z.object({ type: z.literal("margot_intent_expired"), interaction_id: interactionId, draft_id: draftId }).strict(),
]);
export type AuditEvent = z.infer<typeof AuditEvent>;
export type AuditEventType = AuditEvent["type"];
