// A research follow-up ("do another deep dive on Y") is its own outcome: one row in
// MARGOT_FOLLOW_UP_PATH for Pi-CEO to start the new research, ledger and audit rows, no draft.
import { readFileSync } from "node:fs";
import { join } from "node:path";
import { describe, expect, it } from "vitest";
import { FollowUpRow } from "../../../src/margot/store/follow-ups.js";
import { FIXTURES, type MargotScope, useMargotScope } from "../../helpers/margot-scope.js";

let s: MargotScope;
useMargotScope((scope) => (s = scope));

const heldOut = JSON.parse(readFileSync(join(FIXTURES, "held-out.json"), "utf8")) as { follow_ups: { id: string; body: string }[] };

describe("research follow-ups", () => {
  it("a follow-up gets a follow-up row, a ledger row, an audit row and no draft (held-out follow-ups: at least 3 of 4)", async () => {
    await s.worker();
    const texts = [
      { id: "own-deep-dive", body: "The vendor comparison is thin. Do another deep dive on EU data residency options for Supabase before we choose." },
      ...heldOut.follow_ups,
    ];
    const missed: string[] = [];
    for (const { id, body } of texts) {
      const c = s.completion(`${body} Contact jane@acme.example for the data.`);
      const result = await s.submit(c);
      if (result.status !== "follow_up") {
        missed.push(`${id}: ${result.status}`);
        continue;
      }
      expect(result.reason).toBe("research_follow_up");
      expect(result.draft_id).toBeNull();
      const rows = s.followUpRows().filter((r) => r.interaction_id === c.interaction_id);
      expect(rows, id).toHaveLength(1);
      const row = FollowUpRow.parse(rows[0]);
      expect(row.originating_session_id).toBe(c.originating_session_id);
      expect(row.request.length).toBeGreaterThan(10);
      expect(JSON.stringify(row)).not.toContain("jane@acme.example");
      expect(s.ledgerRows(c.interaction_id).map((r) => r.outcome)).toEqual(["follow_up"]);
      expect(s.auditRows().filter((r) => r.interaction_id === c.interaction_id)).toEqual([
        expect.objectContaining({ type: "margot_intent_classified", status: "follow_up", reason: "research_follow_up" }),
      ]);
    }
    console.log(`follow-ups: ${texts.length - missed.length}/${texts.length}${missed.length ? ` (missed ${missed.join(", ")})` : ""}`);
    expect(missed.filter((m) => m.startsWith("own-"))).toEqual([]);
    expect(missed.length).toBeLessThanOrEqual(1);
    expect(s.telegram.raw.join("\n")).not.toContain("sendMessage");
    expect(await s.drafts.list()).toEqual([]);
  });
});
