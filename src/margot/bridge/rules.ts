// The bridge's safety rules, in the order they are applied. Pure: what
// needs Redis (was it rejected lately? is the rate limit reached?) is asked by the caller and
// passed in, or applied after these rules said "draft".
//
//   1. loop detection   rejected within MARGOT_SUPPRESS_SECONDS  → suppressed / recently_rejected
//   2. confidence floor not action-shaped at ≥ 0.75             → follow_up / research_follow_up when it
//                       asks for more research, else informational / (why)
//   3. destructive verbs present and confidence < 0.90           → suppressed / destructive_needs_higher_confidence
//   4. repo allowlist   target repo not in the projects config   → rejected / repo_not_allowed
//   5. rate limit       (the caller, atomically in Redis)        → queued_rate_limit / rate_limited
// A target repo that could not be decided is not refused: the draft asks the founder to confirm it.
import { ACTION_CONFIDENCE_FLOOR, type ClassifyResult } from "../reading/classify.js";
import type { IntentReason, IntentStatus } from "../contract.js";
import { DESTRUCTIVE_CONFIDENCE_FLOOR } from "../reading/destructive.js";
import { isRepoAllowed, type Project } from "../projects.js";

export interface RulesInput {
  readonly classification: ClassifyResult;
  /** The detected target repo (null when none could be decided). */
  readonly targetRepo: string | null;
  /** Destructive verbs found in the research body. */
  readonly destructiveVerbs: readonly string[];
  readonly projects: readonly Project[];
  /** When the interaction was rejected within the suppression window: until when it stays suppressed. */
  readonly suppressedUntil: Date | null;
}

export type StopStatus = Extract<IntentStatus, "informational" | "follow_up" | "suppressed" | "rejected">;

export type RulesOutcome =
  | { readonly route: "draft" }
  | { readonly route: "stop"; readonly status: StopStatus; readonly reason: IntentReason; readonly explanation: string };

const stop = (status: StopStatus, reason: IntentReason, explanation: string): RulesOutcome => ({ route: "stop", status, reason, explanation });

export function applyRules(input: RulesInput): RulesOutcome {
  const { classification: c } = input;
  if (input.suppressedUntil !== null) {
    return stop(
      "suppressed",
      "recently_rejected",
      `a draft for this interaction was rejected; drafts for it are suppressed until ${input.suppressedUntil.toISOString()}`,
    );
  }
  if (c.classification !== "action_shaped" || c.confidence < ACTION_CONFIDENCE_FLOOR) {
    // First: an inconclusive finding that asks for more research is a follow-up, not a dead end.
    if (c.signals.research_follow_up.length > 0) {
      return stop("follow_up", "research_follow_up", "a research follow-up: it asks for more research, not a change (written to MARGOT_FOLLOW_UP_PATH)");
    }
    if (c.classification === "unknown") {
      return stop(
        "informational",
        "classification_unknown",
        `classification unknown (${c.signals.unknown_reason ?? "no clear evidence"}); never routed to action`,
      );
    }
    if (c.signals.action_sentence !== null) {
      return stop("informational", "confidence_too_low", `the strongest recommendation is below the ${ACTION_CONFIDENCE_FLOOR} confidence floor for action`);
    }
    return stop("informational", "not_action_shaped", "no recommendation to act on: informational");
  }
  if (input.destructiveVerbs.length > 0 && c.confidence < DESTRUCTIVE_CONFIDENCE_FLOOR) {
    return stop(
      "suppressed",
      "destructive_needs_higher_confidence",
      `destructive verbs (${input.destructiveVerbs.join(", ")}) need confidence ≥ ${DESTRUCTIVE_CONFIDENCE_FLOOR}; this is ${c.confidence}`,
    );
  }
  if (input.targetRepo !== null && !isRepoAllowed(input.projects, input.targetRepo)) {
    return stop("rejected", "repo_not_allowed", `target repo ${input.targetRepo} is not in the projects config (repo allowlist)`);
  }
  return { route: "draft" };
}
