// The Margot bridge's wire contract (the margot-intent queue, docs/contracts.md),
// as zod schemas. Types are inferred from the schemas so there is one source of truth.
// Objects are strict: an unknown field is refused, never silently dropped.
import { z } from "zod";
import { Classification, IntentReason, IntentStatus } from "../audit/vocabulary.js";

/** Longest interaction id we accept; Margot's ids are well under this. */
export const INTERACTION_ID_MAX_LENGTH = 256;

/**
 * The interaction id doubles as the BullMQ job id (one classification per
 * interaction, whatever the timing), so it must be a legal custom job id:
 * BullMQ refuses ids containing `:` (its key separator) and ids that read as
 * integers. We refuse those here instead of mapping them, so the id in the
 * ledger, the audit rows and the Linear ticket is always the id Margot gave.
 * Whitespace, control characters and backticks are refused too: the id is
 * rendered inside backticks in the ticket body and written to log lines.
 */
export const InteractionId = z
  .string({ error: "interaction_id must be a string" })
  .min(1, { error: "interaction_id must not be empty" })
  .max(INTERACTION_ID_MAX_LENGTH, {
    error: `interaction_id must be at most ${INTERACTION_ID_MAX_LENGTH} characters`,
  })
  // Regexes rather than refinements, so the JSON Schemas carry them as patterns. \x00-\x1f and \x7f-\x9f
  // are exactly Unicode's control characters (Cc), spelled so that any regex dialect reads them.
  .regex(/^[^:]*$/, { error: "interaction_id must not contain ':' (it is used as a BullMQ job id)" })
  .regex(/^(?!-?\d+$)/, { error: "interaction_id must not be all digits (BullMQ refuses integer job ids)" })
  .regex(/^[^\s`\x00-\x1f\x7f-\x9f]*$/, { error: "interaction_id must not contain whitespace, control characters or backticks" });

const isoDatetime = (field: string) =>
  z.iso.datetime({ offset: true, error: `${field} must be an ISO 8601 datetime, e.g. 2026-09-17T03:04:05Z` });

const nonEmpty = (field: string) =>
  z.string({ error: `${field} must be a string` }).min(1, { error: `${field} must not be empty` });

const nullableString = (field: string) => z.string({ error: `${field} must be a string or null` }).nullable();

/**
 * The Margot body size limit, in UTF-8 bytes (README "Margot", ADR 0017). Reading, classifying
 * and redacting scale with the body; the bridge works in slices so no size holds the event loop
 * long, and this bound keeps one completion's total work and its Redis footprint bounded too.
 */
export const MARGOT_BODY_MAX_BYTES = 1024 * 1024;

/** Input: one completed Margot research run. */
export const MargotResearchCompletion = z
  .object({
    interaction_id: InteractionId,
    body: nonEmpty("body")
      .refine((body) => body.length <= MARGOT_BODY_MAX_BYTES && Buffer.byteLength(body, "utf8") <= MARGOT_BODY_MAX_BYTES, {
        error: (issue) =>
          `body must be at most ${MARGOT_BODY_MAX_BYTES} bytes of UTF-8 (1 MiB, the Margot body size limit); this one is ${typeof issue.input === "string" ? Buffer.byteLength(issue.input, "utf8") : "?"} bytes`,
      })
      // JSON Schema counts characters, not bytes: it can say the bound every body within the limit meets.
      .meta({ maxLength: MARGOT_BODY_MAX_BYTES, description: `At most ${MARGOT_BODY_MAX_BYTES} bytes of UTF-8 (1 MiB, the Margot body size limit)` }),
    originated_at: isoDatetime("originated_at"),
    originating_session_id: nonEmpty("originating_session_id"),
  })
  .strict();
export type MargotResearchCompletion = z.infer<typeof MargotResearchCompletion>;

// The closed sets live in the audit vocabulary (a leaf every domain imports); re-exported here.
export { Classification, IntentReason, IntentStatus } from "../audit/vocabulary.js";

/** The size of a proposed change (see extract.ts for the heuristic). */
export const ComplexityTier = z.enum(["basic", "detailed", "advanced"]);
export type ComplexityTier = z.infer<typeof ComplexityTier>;



/** Which reasons may accompany which status; `drafted` carries no reason. */
export const REASONS_BY_STATUS: Readonly<Record<IntentStatus, readonly IntentReason[]>> = {
  informational: ["confidence_too_low", "not_action_shaped", "classification_unknown"],
  follow_up: ["research_follow_up"],
  suppressed: ["recently_rejected", "destructive_needs_higher_confidence"],
  rejected: ["repo_not_allowed"],
  drafted: [],
  queued_rate_limit: ["rate_limited"],
  duplicate: ["duplicate_interaction"],
};

/** Output per completion: what was decided, with `status` and a machine `reason`. */
export const MargotIntentResult = z
  .object({
    interaction_id: InteractionId,
    classification: Classification,
    confidence: z.number({ error: "confidence must be a number" }).min(0).max(1),
    action_summary: nullableString("action_summary"), // populated when action_shaped
    target_repo: nullableString("target_repo"), // populated when action_shaped and detected
    draft_id: nullableString("draft_id"), // populated when a draft was posted (or queued)
    skipped_reason: nullableString("skipped_reason"), // human sentence, when not drafted
    status: IntentStatus,
    reason: IntentReason.nullable(),
    /**
     * Duplicates only: where the interaction stands now — its draft's state (pending, queued,
     * posted, deferred, approved, accepted = approved with its Linear issue, rejected, expired),
     * or the first decision's status when there was no draft.
     */
    current_state: z.string().min(1).optional(),
  })
  .strict()
  .superRefine((result, ctx) => {
    const allowed = REASONS_BY_STATUS[result.status];
    if (result.reason === null) {
      if (allowed.length > 0) {
        ctx.addIssue({
          code: "custom",
          path: ["reason"],
          message: `reason is required when status is ${result.status} (one of ${allowed.join(", ")})`,
        });
      }
    } else if (!allowed.includes(result.reason)) {
      ctx.addIssue({
        code: "custom",
        path: ["reason"],
        message:
          allowed.length === 0
            ? `reason must be null when status is ${result.status}`
            : `reason ${result.reason} does not go with status ${result.status} (one of ${allowed.join(", ")})`,
      });
    }
  })
  // The rule above, as JSON Schema says it: for each status, the reasons that go with it.
  .meta({
    allOf: Object.entries(REASONS_BY_STATUS).map(([status, reasons]) => ({
      if: { type: "object", properties: { status: { const: status } }, required: ["status"] },
      then: { type: "object", properties: { reason: reasons.length === 0 ? { type: "null" } : { enum: [...reasons] } }, required: ["reason"] },
    })),
  });
export type MargotIntentResult = z.infer<typeof MargotIntentResult>;

/** Output after the founder's 👍: the Linear issue that now carries the work. */
export const MargotActionAccepted = z
  .object({
    interaction_id: InteractionId,
    draft_id: nonEmpty("draft_id"),
    linear_issue_id: nonEmpty("linear_issue_id"),
    linear_issue_identifier: nonEmpty("linear_issue_identifier"), // e.g. "RA-1900"
    labels_applied: z.array(nonEmpty("labels_applied[]"), { error: "labels_applied must be an array of strings" }),
  })
  .strict();
export type MargotActionAccepted = z.infer<typeof MargotActionAccepted>;

/**
 * One line naming every offending field, for CLI and job-failure messages:
 * `body: body must not be empty; extra: unknown field`.
 */
export function describeContractError(error: z.ZodError): string {
  return error.issues
    .flatMap((issue) => {
      if (issue.code === "unrecognized_keys") {
        return issue.keys.map((key) => `${[...issue.path, key].join(".")}: unknown field`);
      }
      const where = issue.path.length > 0 ? issue.path.map(String).join(".") : "(root)";
      return [`${where}: ${issue.message}`];
    })
    .join("; ");
}
