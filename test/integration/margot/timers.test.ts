// The draft timers as delayed jobs, with seconds instead of days: expiry, expiry removed by a
// reaction, and a defer that resurfaces the draft with a new expiry clock (which then runs out).
import { describe, expect, it } from "vitest";
import { lastJsonLine, runCli, waitFor } from "../../helpers/cli.js";
import { reactionUpdate } from "../../helpers/fake-telegram.js";
import { ACTION_BODY, type MargotScope, useMargotScope } from "../../helpers/margot-scope.js";

let s: MargotScope;
useMargotScope((scope) => (s = scope));

describe("draft timers", () => {
  it("no reaction within the expiry → expired: audit row, ledger row, one notice; nothing created", async () => {
    await s.worker(s.env({ MARGOT_DRAFT_EXPIRY_SECONDS: "2" }));
    const c = s.completion(ACTION_BODY);
    const result = await s.submit(c);
    const posted = await s.draft(result.draft_id!);
    const expired = await s.waitState(result.draft_id!, "expired", 15_000);
    expect(Date.parse(expired.decided_at!)).toBeGreaterThanOrEqual(Date.parse(posted.expires_at!) - 50);
    expect(expired.decided_by).toBe("timer");
    await waitFor(() => s.ledgerRows(c.interaction_id).length === 2, 5000);
    expect(s.ledgerRows(c.interaction_id).map((r) => r.outcome)).toEqual(["drafted", "expired"]);
    expect(s.auditRows().find((r) => r.type === "margot_intent_expired")).toEqual({
      ts: expect.any(String),
      seq: expect.any(Number),
      prev: expect.any(String),
      type: "margot_intent_expired",
      interaction_id: c.interaction_id,
      draft_id: result.draft_id,
    });
    await waitFor(() => s.telegram.notices().some((n) => /expired/.test(n.text)), 5000);
    expect(s.linear.issues).toHaveLength(0);
  });

  it("a reaction that lands first removes the expiry job", async () => {
    // Room for a CLI start on a loaded machine before the expiry; then wait past the old expiry.
    await s.worker(s.localEnv({ MARGOT_DRAFT_EXPIRY_SECONDS: "8" }));
    const result = await s.submit(s.completion(ACTION_BODY));
    const posted = await s.draft(result.draft_id!);
    const expireId = `expire-${result.draft_id}-0`;
    expect(await (await s.queue.getJob(expireId))?.getState()).toBe("delayed");
    const react = await runCli(["drafts", "react", result.draft_id!, "reject"], s.localEnv());
    expect(react.code, react.stderr).toBe(0);
    expect(await s.queue.getJob(expireId)).toBeUndefined();
    await new Promise((r) => setTimeout(r, Math.max(0, Date.parse(posted.expires_at!) - Date.now()) + 1000));
    expect((await s.draft(result.draft_id!)).state).toBe("rejected");
    expect(s.auditTypes()).not.toContain("margot_intent_expired");
  });

  it("defer → the draft resurfaces after MARGOT_DEFER_SECONDS with a new expiry clock → then expires", async () => {
    // Expiry well above the defer, so a loaded machine cannot expire the draft before the 😴 lands.
    await s.service(s.env({ MARGOT_DRAFT_EXPIRY_SECONDS: "10", MARGOT_DEFER_SECONDS: "8" }));
    const c = s.completion(ACTION_BODY);
    const result = await s.submit(c);
    const draftId = result.draft_id!;
    const first = await s.draft(draftId);
    const message = s.telegram.draftMessage(draftId)!;

    // ⏳ is not among Telegram's reactions; 😴 is, and means defer.
    expect((await s.webhook(reactionUpdate({ chatId: s.telegram.chatId, messageId: message.message_id, emoji: "😴" }))).status).toBe(200);
    const deferred = await s.waitState(draftId, "deferred");
    // The state is recorded first, then the expiry job is removed (ADR 0004).
    await waitFor(async () => (await s.queue.getJob(`expire-${draftId}-0`)) === undefined, 5000, () => "the expiry job to be removed");
    expect(Date.parse(deferred.resurface_at!) - Date.parse(deferred.deferred_at!)).toBe(8000);
    const list = lastJsonLine((await runCli(["drafts", "list", "--json"], s.env())).stdout) as {
      drafts: Array<{ id: string; state: string; resurface_at: string }>;
    };
    expect(list.drafts[0]).toMatchObject({ id: draftId, state: "deferred", resurface_at: deferred.resurface_at });

    // It comes back: posted again (a new message), generation 1, a fresh expiry clock.
    await waitFor(async () => (await s.draft(draftId)).generation === 1, 20_000, () => "the draft to resurface");
    const back = await s.draft(draftId);
    expect(back.state).toBe("posted");
    expect(Date.parse(back.posted_at!)).toBeGreaterThanOrEqual(Date.parse(deferred.resurface_at!) - 50);
    // A fresh 10 s clock (its start is taken just before the send, so allow for the send's own time).
    expect(Date.parse(back.expires_at!) - Date.parse(back.posted_at!)).toBeGreaterThanOrEqual(9000);
    expect(Date.parse(back.expires_at!)).toBeGreaterThan(Date.parse(first.expires_at!));
    expect(s.telegram.drafts().map((m) => m.text.split("\n")[0])).toEqual([`📝 Margot draft ${draftId}`, `⏰ Deferred Margot draft ${draftId} is back`]);
    expect(back.messages).toHaveLength(2);

    // Nobody reacts this time: it expires on the new clock, not the old one.
    const expired = await s.waitState(draftId, "expired", 20_000);
    expect(Date.parse(expired.decided_at!)).toBeGreaterThanOrEqual(Date.parse(back.expires_at!) - 50);
    await waitFor(() => s.ledgerRows(c.interaction_id).length === 2, 5000);
    expect(s.ledgerRows(c.interaction_id).map((r) => r.outcome)).toEqual(["drafted", "expired"]);
    expect(s.auditTypes(c.interaction_id)).toEqual(["margot_intent_classified", "margot_intent_drafted", "margot_intent_expired"]);
  });

  it("a reaction on the first message of a resurfaced draft still finds the draft", async () => {
    await s.service(s.env({ MARGOT_DEFER_SECONDS: "1" }));
    const result = await s.submit(s.completion(ACTION_BODY));
    const draftId = result.draft_id!;
    const firstMessage = s.telegram.draftMessage(draftId)!.message_id;
    const react = await runCli(["drafts", "react", draftId, "defer"], s.env());
    expect(react.code, react.stderr).toBe(0);
    await waitFor(async () => (await s.draft(draftId)).generation === 1, 15_000);
    await s.webhook(reactionUpdate({ chatId: s.telegram.chatId, messageId: firstMessage, emoji: "👍" }));
    await s.waitState(draftId, "approved");
    await waitFor(() => s.linear.issues.length === 1, 10_000);
    await new Promise((r) => setTimeout(r, 300));
    expect(await s.queue.getJob(`expire-${draftId}-1`)).toBeUndefined();
  });
});
