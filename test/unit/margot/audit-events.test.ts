import { describe, expect, it } from "vitest";
import { AuditEvent } from "../../../src/audit/events.js";
import { LedgerRow } from "../../../src/margot/store/ledger.js";

describe("margot audit events and ledger rows are closed", () => {
  it("accepts exactly the fields the bridge writes", () => {
    expect(
      AuditEvent.safeParse({
        type: "margot_intent_classified",
        interaction_id: "i",
        classification: "informational",
        confidence: 0.9,
        status: "informational",
        reason: "not_action_shaped",
      }).success,
    ).toBe(true);
    expect(AuditEvent.safeParse({ type: "margot_intent_drafted", interaction_id: "i", draft_id: "d-1", target_repo: null, channel: "local" }).success).toBe(
      true,
    );
    expect(
      AuditEvent.safeParse({
        type: "margot_intent_accepted",
        interaction_id: "i",
        draft_id: "d-1",
        linear_issue_id: "x",
        linear_issue_identifier: "RA-1",
        labels_applied: ["a"],
      }).success,
    ).toBe(true);
    expect(
      AuditEvent.safeParse({ type: "margot_intent_rejected", interaction_id: "i", draft_id: null, reason: "repo_not_allowed", rejected_by: "rules" }).success,
    ).toBe(true);
    expect(AuditEvent.safeParse({ type: "margot_intent_expired", interaction_id: "i", draft_id: "d-1" }).success).toBe(true);
  });

  it("refuses unknown fields and wrong values", () => {
    expect(AuditEvent.safeParse({ type: "margot_intent_expired", interaction_id: "i", draft_id: "d-1", body: "research text" }).success).toBe(false);
    expect(
      AuditEvent.safeParse({
        type: "margot_intent_classified",
        interaction_id: "i",
        classification: "maybe",
        confidence: 0.9,
        status: "informational",
        reason: null,
      }).success,
    ).toBe(false);
    expect(AuditEvent.safeParse({ type: "margot_intent_rejected", interaction_id: "i", draft_id: null, reason: "x", rejected_by: "someone" }).success).toBe(
      false,
    );
    expect(
      LedgerRow.safeParse({ ts: "2026-09-17T00:00:00Z", interaction_id: "i", classification: "action_shaped", confidence: 0.8, outcome: "drafted", extra: 1 })
        .success,
    ).toBe(false);
    expect(
      LedgerRow.safeParse({ ts: "2026-09-17T00:00:00Z", interaction_id: "i", classification: "action_shaped", confidence: 0.8, outcome: "duplicate" }).success,
    ).toBe(false);
  });
});
