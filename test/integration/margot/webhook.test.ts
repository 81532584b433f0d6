// POST /telegram/webhook through a real `start` process: the secret, the body cap, dedup of
// redelivered updates, and reactions on drafts already decided.
import { describe, expect, it } from "vitest";
import { lastJsonLine, runCli, waitFor } from "../../helpers/cli.js";
import { reactionUpdate } from "../../helpers/fake-telegram.js";
import { ACTION_BODY, type MargotScope, WEBHOOK_SECRET, useMargotScope } from "../../helpers/margot-scope.js";

let s: MargotScope;
useMargotScope((scope) => (s = scope));

async function postedDraft(): Promise<{ draftId: string; messageId: number; interactionId: string }> {
  const c = s.completion(ACTION_BODY);
  const result = await s.submit(c);
  const message = s.telegram.draftMessage(result.draft_id!)!;
  return { draftId: result.draft_id!, messageId: message.message_id, interactionId: c.interaction_id };
}

async function snapshot(draftId: string): Promise<string> {
  const counts = await s.queue.getJobCounts("waiting", "active", "delayed", "completed", "failed");
  const keys = (await s.redis.keys(`${s.prefix}:margot:tg-update:*`)).length;
  return JSON.stringify({ draft: await s.redis.hgetall(s.drafts.key(draftId)), counts, keys, sent: s.telegram.sent.length, audit: s.auditRows().length });
}

describe("telegram webhook", () => {
  it("a wrong, missing, other-length, multibyte or 10 KB secret → 401, and nothing changes", async () => {
    await s.service();
    const { draftId, messageId } = await postedDraft();
    const before = await snapshot(draftId);
    const update = reactionUpdate({ chatId: s.telegram.chatId, messageId, emoji: "👍" });
    const variants: Array<Record<string, string>> = [
      {},
      { "x-telegram-bot-api-secret-token": "wrong-secret_0123456789abcdef" },
      { "x-telegram-bot-api-secret-token": WEBHOOK_SECRET.slice(0, -1) },
      { "x-telegram-bot-api-secret-token": `${WEBHOOK_SECRET}x` },
      { "x-telegram-bot-api-secret-token": "" },
      { "x-telegram-bot-api-secret-token": encodeURIComponent("sécret-✓") },
      { "x-telegram-bot-api-secret-token": "A".repeat(10 * 1024) },
      { authorization: `Bearer ${WEBHOOK_SECRET}` },
    ];
    for (const headers of variants) {
      const res = await s.webhook(update, headers);
      expect(res.status, JSON.stringify(Object.keys(headers))).toBe(401);
    }
    // A multibyte header value sent raw (not URL-encoded) is refused as well.
    const raw = await fetch(`${s.baseUrl}/telegram/webhook`, {
      method: "POST",
      headers: { "content-type": "application/json", "x-telegram-bot-api-secret-token": Buffer.from("sécret", "utf8").toString("latin1") },
      body: JSON.stringify(update),
    });
    expect(raw.status).toBe(401);
    await new Promise((r) => setTimeout(r, 300));
    expect(await snapshot(draftId)).toBe(before);
    expect((await s.draft(draftId)).state).toBe("posted");
  });

  it("the body is capped: 100 KB with the right secret → 413, nothing changes", async () => {
    await s.service();
    const { draftId, messageId } = await postedDraft();
    const before = await snapshot(draftId);
    const big = { ...reactionUpdate({ chatId: s.telegram.chatId, messageId, emoji: "👍" }), padding: "x".repeat(100 * 1024) };
    expect((await s.webhook(big)).status).toBe(413);
    expect((await s.webhook("{not json")).status).toBe(400);
    expect(await snapshot(draftId)).toBe(before);
  });

  it("an update delivered twice (at once, and again after its job was removed) acts once", async () => {
    await s.service();
    const { draftId, messageId, interactionId } = await postedDraft();
    const update = reactionUpdate({ chatId: s.telegram.chatId, messageId, emoji: "👍" });
    const [a, b] = await Promise.all([s.webhook(update), s.webhook(update)]);
    expect([a.status, b.status]).toEqual([200, 200]);
    await s.waitState(draftId, "approved");
    await waitFor(() => s.auditTypes(interactionId).includes("margot_intent_accepted"), 15_000);
    const jobId = `react-tg-${String(update.update_id)}`;
    await s.waitJob(jobId);
    // Retention removes finished jobs; the update id is remembered beyond that.
    await (await s.queue.getJob(jobId))!.remove();
    const later = await s.webhook(update);
    expect(later.status).toBe(200);
    expect(later.json).toMatchObject({ duplicate: true });
    await new Promise((r) => setTimeout(r, 500));
    expect(await s.queue.getJob(jobId)).toBeUndefined();
    expect(s.linear.issues).toHaveLength(1);
    expect(s.linear.count("MargotIssueCreate")).toBe(1);
    expect(s.auditTypes(interactionId).filter((t) => t === "margot_intent_accepted")).toHaveLength(1);
    expect(s.ledgerRows(interactionId).map((r) => r.outcome)).toEqual(["drafted", "accepted"]);
  });

  it("a reaction on a decided draft changes nothing and says so (Telegram and CLI)", async () => {
    await s.service();
    const { draftId, messageId, interactionId } = await postedDraft();
    await s.webhook(reactionUpdate({ chatId: s.telegram.chatId, messageId, emoji: "👍" }));
    await waitFor(async () => (await s.draft(draftId)).linear_issue_id !== null, 15_000);
    await waitFor(() => s.ledgerRows(interactionId).length === 2, 10_000);
    // The approval's last effect is its notice: snapshot only once the approval has fully settled.
    await waitFor(async () => (await s.redis.hexists(s.drafts.key(draftId), "fx:notice:accepted")) === 1, 10_000);
    const before = JSON.stringify(await s.redis.hgetall(s.drafts.key(draftId)));

    const late = reactionUpdate({ chatId: s.telegram.chatId, messageId, emoji: "👎", old: ["👍"] });
    expect((await s.webhook(late)).status).toBe(200);
    const outcome = (await s.waitJob(`react-tg-${String(late.update_id)}`)) as { changed: boolean; state: string; message: string };
    expect(outcome).toMatchObject({ changed: false, state: "approved" });
    expect(outcome.message).toMatch(/is already approved \(by telegram:42 at .*\); your reject changed nothing/);
    await waitFor(() => s.telegram.notices().some((n) => /your reject changed nothing/.test(n.text)), 5000);

    const cli = await runCli(["drafts", "react", draftId, "defer"], s.env());
    expect(cli.code).toBe(1);
    expect(cli.stderr).toMatch(/is already approved .*your defer changed nothing/);
    expect(lastJsonLine(cli.stdout)).toMatchObject({ changed: false, state: "approved" });

    expect(JSON.stringify(await s.redis.hgetall(s.drafts.key(draftId)))).toBe(before);
    expect(s.linear.issues).toHaveLength(1);
    expect(s.auditTypes(interactionId)).toEqual(["margot_intent_classified", "margot_intent_drafted", "margot_intent_accepted"]);
    expect(s.ledgerRows(interactionId).map((r) => r.outcome)).toEqual(["drafted", "accepted"]);
  });

  it("updates from another chat, from a non-reviewer, or that are not reactions are ignored", async () => {
    await s.service(s.env({ TELEGRAM_REVIEWER_IDS: "42" }));
    const { draftId, messageId } = await postedDraft();
    const before = await snapshot(draftId);
    const ignored = [
      reactionUpdate({ chatId: "-1009999999999", messageId, emoji: "👍" }),
      reactionUpdate({ chatId: s.telegram.chatId, messageId, emoji: "👍", userId: 7 }),
      reactionUpdate({ chatId: s.telegram.chatId, messageId, emoji: "🔥" }),
      reactionUpdate({ chatId: s.telegram.chatId, messageId: 1, emoji: "👍" }),
      { update_id: 77, edited_message: { message_id: 1 } },
    ];
    for (const update of ignored) {
      const res = await s.webhook(update);
      expect(res.status).toBe(200);
      expect(res.json).toMatchObject({ ok: true, ignored: expect.any(String) });
    }
    expect(await snapshot(draftId)).toBe(before);
  });
});

describe("telegram webhook without a review chat", () => {
  it("answers 503 (never 200 for an update it did not record) and `start` warns", async () => {
    const service = await s.service(s.env({ REVIEW_CHAT_ID: undefined }));
    expect(service.stderr).toMatch(/REVIEW_CHAT_ID is not set: the Telegram webhook answers 503/);
    const res = await s.webhook(reactionUpdate({ chatId: s.telegram.chatId, messageId: 1, emoji: "👍" }));
    expect(res.status).toBe(503);
    expect(res.json).toMatchObject({ ok: false });
  });
});
