// The closed sets the audit events (and the domains) are written in: run failure and skip reasons,
// Margot classifications, statuses and reasons. A leaf: it imports nothing of the project, so the
// audit event contracts depend on no domain, and the domains import these from here.
import { z } from "zod";

/** Closed set of reasons a run did not end `ok` (README has the table). */
export const FAILURE_REASONS = [
  "kill_switch_mid_run",
  "cancelled",
  "timeout",
  "no_result",
  "bad_result",
  "nonzero_exit",
  "env_unresolved",
  "agent_unavailable",
  "provider_unavailable",
  "spawn_failed",
  "worker_lost",
  "worker_shutdown",
  "agent_failed",
  "invalid_payload",
  "audit_unwritable",
  "model_auth_failed",
  "model_unavailable",
  "agent_idle",
  "budget_exceeded",
] as const;
export type FailureReason = (typeof FAILURE_REASONS)[number];

/** Closed set of reasons a run was skipped before anything launched. */
export const SKIP_REASONS = ["kill_switch_active", "sandcastle_disabled", "concurrency_cap"] as const;
export type SkipReason = (typeof SKIP_REASONS)[number];

export const Classification = z.enum(["action_shaped", "informational", "unknown"]);
export type Classification = z.infer<typeof Classification>;

/** What the bridge did with a completion: a `MargotIntentResult`'s `status`. */
export const IntentStatus = z.enum([
  "informational",
  "follow_up",
  "suppressed",
  "rejected",
  "drafted",
  "queued_rate_limit",
  "duplicate",
]);
export type IntentStatus = z.infer<typeof IntentStatus>;

/** Why a completion did not become a posted draft. Closed set: add here, not at call sites. */
export const IntentReason = z.enum([
  "confidence_too_low", // action-shaped but below the 0.75 floor
  "not_action_shaped", // classified informational
  "research_follow_up", // "do another deep dive on Y": a new research call, not a ticket
  "classification_unknown", // empty, garbled, or evidence that cancels out
  "destructive_needs_higher_confidence", // destructive verbs present, confidence < 0.90
  "recently_rejected", // same interaction rejected within 7 days
  "repo_not_allowed", // target repo not in the projects config
  "rate_limited", // 6th draft inside the rolling 24 h window
  "duplicate_interaction", // this interaction_id was already processed
]);
export type IntentReason = z.infer<typeof IntentReason>;
