import { describe, expect, it } from "vitest";
import { parseUpdate, reactionForEmoji, reactionForText } from "../../../src/review/telegram-updates.js";
import { clip, draftText, TELEGRAM_TEXT_LIMIT } from "../../../src/review/telegram-channel.js";

const chat = { id: -1001234567890, type: "supergroup" };
const filter = { chatId: "-1001234567890", reviewerIds: [] as string[] };
const reaction = (emoji: string[], old: string[] = [], extra: Record<string, unknown> = {}) => ({
  update_id: 10,
  message_reaction: { chat, message_id: 5, user: { id: 42 }, date: 1, old_reaction: old.map((e) => ({ type: "emoji", emoji: e })), new_reaction: emoji.map((e) => ({ type: "emoji", emoji: e })), ...extra },
});

describe("telegram updates → reactions", () => {
  it("maps review emoji, with skin tones and variation selectors", () => {
    expect(reactionForEmoji("👍")).toBe("approve");
    expect(reactionForEmoji("👍🏽")).toBe("approve");
    expect(reactionForEmoji("👎")).toBe("reject");
    expect(reactionForEmoji("❌")).toBe("reject");
    expect(reactionForEmoji("⏳")).toBe("defer");
    expect(reactionForEmoji("😴")).toBe("defer");
    expect(reactionForEmoji("❤")).toBeNull();
  });

  it("reads reply commands and emoji with a reason", () => {
    expect(reactionForText("/reject@MargotBot too risky now")).toEqual({ reaction: "reject", reason: "too risky now" });
    expect(reactionForText("/APPROVE")).toEqual({ reaction: "approve", reason: null });
    expect(reactionForText("❌ wrong repo")).toEqual({ reaction: "reject", reason: "wrong repo" });
    expect(reactionForText("⏳")).toEqual({ reaction: "defer", reason: null });
    expect(reactionForText("looks fine to me")).toBeNull();
    expect(reactionForText(`/reject ${"x".repeat(900)}`)?.reason).toHaveLength(500);
  });

  it("only an added review emoji counts", () => {
    expect(parseUpdate(reaction(["👍"]), filter)).toEqual({ kind: "reaction", update_id: 10, chat_id: "-1001234567890", message_id: 5, reaction: "approve", reason: null, actor: "42" });
    expect(parseUpdate(reaction(["👍", "👎"], ["👍"]), filter)).toMatchObject({ reaction: "reject" });
    expect(parseUpdate(reaction([], ["👍"]), filter)).toMatchObject({ kind: "ignore", why: "no review emoji added" });
    expect(parseUpdate(reaction(["🔥"]), filter)).toMatchObject({ kind: "ignore" });
    expect(parseUpdate({ update_id: 3, message_reaction: { ...reaction(["👍"]).message_reaction, new_reaction: [{ type: "custom_emoji", custom_emoji_id: "1" }] } }, filter)).toMatchObject({ kind: "ignore" });
  });

  it("other chats, non-reviewers and anything that is not an update are ignored", () => {
    expect(parseUpdate(reaction(["👍"]), { chatId: "-100999", reviewerIds: [] })).toMatchObject({ kind: "ignore", why: "another chat" });
    expect(parseUpdate(reaction(["👍"]), { ...filter, reviewerIds: ["7"] })).toMatchObject({ kind: "ignore", why: "not a reviewer" });
    expect(parseUpdate(reaction(["👍"]), { ...filter, reviewerIds: ["42"] })).toMatchObject({ kind: "reaction" });
    expect(parseUpdate(reaction(["👍"]), { chatId: "@reviewroom", reviewerIds: [] })).toMatchObject({ kind: "ignore" });
    expect(parseUpdate(reaction(["👍"], [], { chat: { ...chat, username: "ReviewRoom" } }), { chatId: "@reviewroom", reviewerIds: [] })).toMatchObject({ kind: "reaction" });
    expect(parseUpdate({ nope: true }, filter)).toMatchObject({ kind: "ignore", update_id: null });
    expect(parseUpdate("string", filter)).toMatchObject({ kind: "ignore" });
    expect(parseUpdate({ update_id: 1, message: { message_id: 2, chat, text: "/approve" } }, filter)).toMatchObject({ kind: "ignore" });
  });

  it("a reply to a draft message is a reaction on that message", () => {
    const update = { update_id: 11, message: { message_id: 99, chat, from: { id: 42 }, text: "/reject not now", reply_to_message: { message_id: 5 } } };
    expect(parseUpdate(update, filter)).toEqual({ kind: "reaction", update_id: 11, chat_id: "-1001234567890", message_id: 5, reaction: "reject", reason: "not now", actor: "42" });
  });

  it("draft messages fit Telegram's 4096 characters", () => {
    const text = draftText({ draft_id: "d-1", title: "t", body: "x".repeat(10_000), kind: "new", expires_at: "2026-09-18T00:00:00.000Z" });
    expect(text.length).toBe(TELEGRAM_TEXT_LIMIT);
    expect(text).toMatch(/truncated; the full body goes into the Linear issue\)$/);
    expect(clip("short")).toBe("short");
  });
});
