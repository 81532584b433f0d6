// The Margot bridge's verification, checks 2–9 as numbered below (1, compile + import, is
// test/unit/foundation/compile-smoke.test.ts), through real worker processes, a real Redis, and
// local servers that speak the Telegram Bot API and Linear GraphQL.
import { readFileSync } from "node:fs";
import { join } from "node:path";
import { describe, expect, it } from "vitest";
import type { MargotIntentResult } from "../../../src/margot/contract.js";
import { lastJsonLine, runCli, waitFor } from "../../helpers/cli.js";
import { reactionUpdate, replyUpdate } from "../../helpers/fake-telegram.js";
import { ACTION_BODY, FIXTURES, INFORMATIONAL_BODY, type MargotScope, useMargotScope } from "../../helpers/margot-scope.js";

interface Sample {
  id: string;
  kind: string;
  expected: MargotIntentResult["classification"];
  body: string;
}

let s: MargotScope;
useMargotScope((scope) => (s = scope));

describe("the Margot bridge's verification", () => {
  it("2. classification smoke: the 10 synthetic research outputs, ≥ 8/10 right with consistent confidence (10/10 here)", async () => {
    await s.worker();
    const samples = (JSON.parse(readFileSync(join(FIXTURES, "smoke.json"), "utf8")) as { samples: Sample[] }).samples;
    expect(samples.map((x) => x.kind).sort()).toEqual([
      "action", "action", "action", "ambiguous", "ambiguous", "informational", "informational", "informational", "unknown", "unknown",
    ]);
    const results = await Promise.all(samples.map((x) => s.submit(s.completion(x.body))));
    const right = results.filter((r, i) => r.classification === samples[i]!.expected).length;
    expect(right).toBeGreaterThanOrEqual(8);
    expect(right).toBe(10);
    results.forEach((r, i) => {
      const sample = samples[i]!;
      if (sample.expected === "action_shaped") {
        expect(r.confidence, sample.id).toBeGreaterThanOrEqual(0.75);
        expect(r.status, sample.id).toBe("drafted");
        expect(r.action_summary, sample.id).toBeTruthy();
      } else {
        expect(r.status, sample.id).toBe("informational");
        expect(r.draft_id, sample.id).toBeNull();
        expect(r.skipped_reason, sample.id).toBeTruthy();
      }
    });
    expect(s.telegram.drafts()).toHaveLength(3);
  });

  it("3. action-shaped + 👍: draft → reaction → Linear issue RA-VERIFY-1 → margot_intent_accepted → ledger row", async () => {
    s.linear.identifierPrefix = "RA-VERIFY";
    await s.service();
    const c = s.completion(ACTION_BODY);
    const result = await s.submit(c);
    expect(result).toMatchObject({ classification: "action_shaped", status: "drafted", reason: null, target_repo: "CleanExpo/RestoreAssist" });
    const draftId = result.draft_id!;
    // The bridge's own ids: "d-" and 12 random hex digits.
    expect(draftId).toMatch(/^d-[0-9a-f]{12}$/);
    const message = s.telegram.draftMessage(draftId)!;
    expect(message.text).toContain("# Add idempotency to the Stripe webhook handler");

    const res = await s.webhook(reactionUpdate({ chatId: s.telegram.chatId, messageId: message.message_id, emoji: "👍" }));
    expect(res.status).toBe(200);
    const draft = await s.waitState(draftId, "approved");
    await waitFor(async () => (await s.draft(draftId)).linear_issue_identifier !== null, 15_000);
    await waitFor(() => s.auditTypes(c.interaction_id).includes("margot_intent_accepted"), 10_000);

    expect(draft.decided_by).toBe("telegram:42");
    expect(s.linear.issues).toHaveLength(1);
    const issue = s.linear.issues[0]!;
    expect(issue.identifier).toBe("RA-VERIFY-1");
    expect(s.linear.labelNames(issue).sort()).toEqual(["margot:originated", "pi-dev:autonomous", "sandcastle:high-isolation"]);
    expect(s.linear.stateName(issue)).toBe("Ready for Pi-Dev");
    expect(issue.projectId).toBe("project-ra");
    expect(issue.description).toContain(`Approved by Founder via Telegram draft \`${draftId}\` on 20`);
    expect(issue.description.trimEnd().endsWith(`\n[margot-interaction:${c.interaction_id}:${draft.marker_nonce}]`)).toBe(true);

    const accepted = s.auditRows().find((r) => r.type === "margot_intent_accepted")!;
    expect(accepted).toMatchObject({ interaction_id: c.interaction_id, draft_id: draftId, linear_issue_identifier: "RA-VERIFY-1", linear_issue_id: issue.id });
    expect(s.auditTypes(c.interaction_id)).toEqual(["margot_intent_classified", "margot_intent_drafted", "margot_intent_accepted"]);
    await waitFor(() => s.ledgerRows(c.interaction_id).some((r) => r.outcome === "accepted"), 10_000);
    const ledger = s.ledgerRows(c.interaction_id);
    expect(ledger.map((r) => r.outcome)).toEqual(["drafted", "accepted"]);
    expect(ledger[1]).toMatchObject({
      interaction_id: c.interaction_id,
      classification: "action_shaped",
      confidence: result.confidence,
      outcome: "accepted",
      linear_issue_id: issue.id,
      draft_id: draftId,
    });
    expect(Object.keys(ledger[1]!).sort()).toEqual(["classification", "confidence", "draft_id", "interaction_id", "linear_issue_id", "outcome", "ts"]);
    // The channel hears the outcome, threaded under the draft.
    await waitFor(() => s.telegram.notices().some((n) => n.text.includes("RA-VERIFY-1")), 10_000);
    expect(s.telegram.notices().find((n) => n.text.includes("RA-VERIFY-1"))?.reply_to).toBe(message.message_id);
  });

  it("4. action-shaped + ❌: margot_intent_rejected, no Linear issue, ledger row", async () => {
    await s.service();
    const c = s.completion(ACTION_BODY);
    const result = await s.submit(c);
    const message = s.telegram.draftMessage(result.draft_id!)!;
    // A reply is how a reason travels (Telegram has no ❌ reaction).
    const res = await s.webhook(replyUpdate({ chatId: s.telegram.chatId, replyTo: message.message_id, text: "❌ not this quarter" }));
    expect(res.status).toBe(200);
    const draft = await s.waitState(result.draft_id!, "rejected");
    expect(draft.reject_reason).toBe("not this quarter");
    await waitFor(() => s.ledgerRows(c.interaction_id).some((r) => r.outcome === "rejected"), 10_000);
    expect(s.auditRows().find((r) => r.type === "margot_intent_rejected")).toMatchObject({
      interaction_id: c.interaction_id,
      draft_id: result.draft_id,
      reason: "not this quarter",
      rejected_by: "founder",
    });
    expect(s.linear.count("MargotIssueCreate")).toBe(0);
    expect(s.linear.issues).toHaveLength(0);
    expect(s.ledgerRows(c.interaction_id).map((r) => r.outcome)).toEqual(["drafted", "rejected"]);
  });

  it("4b. a 👎 reaction rejects too", async () => {
    await s.service();
    const result = await s.submit(s.completion(ACTION_BODY));
    const message = s.telegram.draftMessage(result.draft_id!)!;
    await s.webhook(reactionUpdate({ chatId: s.telegram.chatId, messageId: message.message_id, emoji: "👎" }));
    expect((await s.waitState(result.draft_id!, "rejected")).reject_reason).toBeNull();
    expect(s.linear.issues).toHaveLength(0);
  });

  it("5. informational: margot_intent_classified only, no draft posted", async () => {
    await s.worker();
    const c = s.completion(INFORMATIONAL_BODY);
    const result = await s.submit(c);
    expect(result).toMatchObject({ classification: "informational", status: "informational", draft_id: null, action_summary: null });
    expect(["not_action_shaped", "confidence_too_low"]).toContain(result.reason);
    expect(s.auditTypes(c.interaction_id)).toEqual(["margot_intent_classified"]);
    expect(s.auditRows()[0]).toEqual({
      ts: expect.any(String),
      seq: expect.any(Number),
      prev: expect.any(String),
      type: "margot_intent_classified",
      interaction_id: c.interaction_id,
      classification: "informational",
      confidence: result.confidence,
      status: "informational",
      reason: result.reason,
    });
    expect(s.telegram.sent).toHaveLength(0);
    expect(s.ledgerRows(c.interaction_id).map((r) => r.outcome)).toEqual(["informational"]);
    expect(await s.drafts.list()).toEqual([]);
  });

  it("6. destructive verb gate: 'delete the customers table' at confidence 0.80 is suppressed (needs 0.90)", async () => {
    await s.worker();
    const c = s.completion("The legacy customers table duplicates the accounts table. We should delete the customers table from the RestoreAssist database.");
    const result = await s.submit(c);
    expect(result.classification).toBe("action_shaped");
    expect(result.confidence).toBe(0.8);
    expect(result).toMatchObject({ status: "suppressed", reason: "destructive_needs_higher_confidence", draft_id: null });
    expect(result.skipped_reason).toMatch(/delete/);
    expect(s.telegram.sent).toHaveLength(0);
    expect(s.ledgerRows(c.interaction_id).map((r) => r.outcome)).toEqual(["suppressed"]);
  });

  it("7. repo allowlist: random/repo-not-in-portfolio → margot_intent_rejected with reason repo_not_allowed", async () => {
    await s.worker();
    const c = s.completion(
      "The webhook handler in random/repo-not-in-portfolio double-processes events. We should add idempotency to the webhook handler in random/repo-not-in-portfolio by recording processed event ids, so that duplicates stop (target: 0 per month).",
    );
    const result = await s.submit(c);
    expect(result).toMatchObject({
      classification: "action_shaped",
      status: "rejected",
      reason: "repo_not_allowed",
      target_repo: "random/repo-not-in-portfolio",
      draft_id: null,
    });
    expect(s.auditRows().find((r) => r.type === "margot_intent_rejected")).toEqual({
      ts: expect.any(String),
      seq: expect.any(Number),
      prev: expect.any(String),
      type: "margot_intent_rejected",
      interaction_id: c.interaction_id,
      draft_id: null,
      reason: "repo_not_allowed",
      rejected_by: "rules",
    });
    expect(s.telegram.sent).toHaveLength(0);
    expect(s.ledgerRows(c.interaction_id).map((r) => r.outcome)).toEqual(["rejected"]);
  });

  it("8. rate limit: 6 action-shaped drafts in the window → the 6th is queued_rate_limit, visibly, and posts when the oldest ages out", async () => {
    // A window long enough that two CLI starts on a loaded machine finish before the queued draft is released.
    await s.worker(s.env({ MARGOT_RATE_LIMIT_MAX: "5", MARGOT_RATE_WINDOW_SECONDS: "15" }));
    const results = await Promise.all([0, 1, 2, 3, 4, 5].map(() => s.submit(s.completion(ACTION_BODY))));
    const statuses = results.map((r) => r.status).sort();
    expect(statuses).toEqual(["drafted", "drafted", "drafted", "drafted", "drafted", "queued_rate_limit"]);
    const queued = results.find((r) => r.status === "queued_rate_limit")!;
    expect(queued.reason).toBe("rate_limited");
    expect(queued.draft_id).toBeTruthy();
    expect(s.telegram.drafts()).toHaveLength(5);

    // Visible, not silent: `drafts list` shows it queued with its release time, and the channel got one line.
    const list = await runCli(["drafts", "list", "--json"], s.env());
    const listed = lastJsonLine(list.stdout) as {
      drafts: Array<{ id: string; state: string; release_at: string | null; draft_number: number }>;
      notices: Array<{ text: string }>;
    };
    const entry = listed.drafts.find((d) => d.id === queued.draft_id)!;
    expect(entry.state).toBe("queued");
    expect(entry.draft_number).toBe(6);
    const releaseAt = Date.parse(entry.release_at!);
    expect(releaseAt).toBeGreaterThan(Date.now());
    expect(listed.notices[0]!.text).toMatch(/^draft 6 of 5 in this 15 s window queued, posts at \d{4}-/);
    const notices = s.telegram.notices().filter((n) => /queued, posts at/.test(n.text));
    expect(notices).toHaveLength(1);
    const human = await runCli(["drafts", "list"], s.env());
    expect(human.stdout).toMatch(new RegExp(`${queued.draft_id}\\s+queued[\\s\\S]*posts at ${entry.release_at!.replace(/[.]/g, "\\.")}`));

    // When the oldest draft ages out, the queued one posts (a delayed rate-limit-release job).
    await s.waitState(queued.draft_id!, "posted", 30_000);
    expect(Date.now()).toBeGreaterThanOrEqual(releaseAt - 50);
    expect(s.telegram.drafts()).toHaveLength(6);
    await waitFor(() => s.ledgerRows(queued.interaction_id).length === 2, 10_000);
    expect(s.ledgerRows(queued.interaction_id).map((r) => r.outcome)).toEqual(["queued_rate_limit", "drafted"]);
  });

  it("9. loop detection: reject the draft for X, re-classify X at once → suppressed / recently_rejected", async () => {
    await s.worker(s.localEnv());
    const c = s.completion(ACTION_BODY);
    const first = await s.submit(c);
    expect(first.status).toBe("drafted");
    const react = await runCli(["drafts", "react", first.draft_id!, "reject", "--reason", "wrong priority"], s.localEnv());
    expect(react.code, react.stderr).toBe(0);
    expect(lastJsonLine(react.stdout)).toMatchObject({ changed: true, state: "rejected" });

    // Re-classify: the finished job is gone (as retention removes it) and Margot's completion arrives again.
    await (await s.queue.getJob(`intent-${c.interaction_id}`))!.remove();
    const again = await s.submit(c);
    expect(again).toMatchObject({ interaction_id: c.interaction_id, status: "suppressed", reason: "recently_rejected", draft_id: null });
    expect(again.skipped_reason).toMatch(/suppressed until/);
    expect((await s.drafts.list()).map((d) => d.state)).toEqual(["rejected"]);
    expect(s.ledgerRows(c.interaction_id).map((r) => r.outcome)).toEqual(["drafted", "rejected", "suppressed"]);
  });
});
