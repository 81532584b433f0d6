import { describe, expect, it } from "vitest";
import { reactionForEmoji } from "../../../src/review/reactions.js";
import { parseUpdate, reactionForText } from "../../../src/review/telegram-updates.js";
import { clip, DRAFT_PARTS_MAX, draftMessages, REACTION_HELP, splitText, TELEGRAM_TEXT_LIMIT } from "../../../src/review/telegram-channel.js";

const chat = { id: -1001234567890, type: "supergroup" };
const filter = { chatId: "-1001234567890", reviewerIds: [] as string[] };
const reaction = (emoji: string[], old: string[] = [], extra: Record<string, unknown> = {}) => ({
  update_id: 10,
  message_reaction: {
    chat,
    message_id: 5,
    user: { id: 42 },
    date: 1,
    old_reaction: old.map((e) => ({ type: "emoji", emoji: e })),
    new_reaction: emoji.map((e) => ({ type: "emoji", emoji: e })),
    ...extra,
  },
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
    expect(parseUpdate(reaction(["👍"]), filter)).toEqual({
      kind: "reaction",
      update_id: 10,
      chat_id: "-1001234567890",
      message_id: 5,
      reaction: "approve",
      reason: null,
      actor: "42",
    });
    expect(parseUpdate(reaction(["👍", "👎"], ["👍"]), filter)).toMatchObject({ reaction: "reject" });
    expect(parseUpdate(reaction([], ["👍"]), filter)).toMatchObject({ kind: "ignore", why: "no review emoji added" });
    expect(parseUpdate(reaction(["🔥"]), filter)).toMatchObject({ kind: "ignore" });
    expect(
      parseUpdate(
        { update_id: 3, message_reaction: { ...reaction(["👍"]).message_reaction, new_reaction: [{ type: "custom_emoji", custom_emoji_id: "1" }] } },
        filter,
      ),
    ).toMatchObject({ kind: "ignore" });
  });

  it("other chats, non-reviewers and anything that is not an update are ignored", () => {
    expect(parseUpdate(reaction(["👍"]), { chatId: "-100999", reviewerIds: [] })).toMatchObject({ kind: "ignore", why: "another chat" });
    expect(parseUpdate(reaction(["👍"]), { ...filter, reviewerIds: ["7"] })).toMatchObject({ kind: "ignore", why: "not a reviewer" });
    expect(parseUpdate(reaction(["👍"]), { ...filter, reviewerIds: ["42"] })).toMatchObject({ kind: "reaction" });
    expect(parseUpdate(reaction(["👍"]), { chatId: "@reviewroom", reviewerIds: [] })).toMatchObject({ kind: "ignore" });
    expect(parseUpdate(reaction(["👍"], [], { chat: { ...chat, username: "ReviewRoom" } }), { chatId: "@reviewroom", reviewerIds: [] })).toMatchObject({
      kind: "reaction",
    });
    expect(parseUpdate({ nope: true }, filter)).toMatchObject({ kind: "ignore", update_id: null });
    expect(parseUpdate("string", filter)).toMatchObject({ kind: "ignore" });
    expect(parseUpdate({ update_id: 1, message: { message_id: 2, chat, text: "/approve" } }, filter)).toMatchObject({ kind: "ignore" });
  });

  it("a reply to a draft message is a reaction on that message", () => {
    const update = { update_id: 11, message: { message_id: 99, chat, from: { id: 42 }, text: "/reject not now", reply_to_message: { message_id: 5 } } };
    expect(parseUpdate(update, filter)).toEqual({
      kind: "reaction",
      update_id: 11,
      chat_id: "-1001234567890",
      message_id: 5,
      reaction: "reject",
      reason: "not now",
      actor: "42",
    });
  });

  it("a draft that fits is one message with the reaction help before its body", () => {
    const { texts, whole } = draftMessages({ draft_id: "d-1", title: "t", body: "the body", kind: "new", expires_at: "2026-09-18T00:00:00.000Z" });
    expect(whole).toBe(true);
    expect(texts).toEqual([`📝 Margot draft d-1\n${REACTION_HELP}\nExpires 2026-09-18T00:00:00.000Z unless someone reacts.\n\nthe body`]);
    expect(clip("short")).toBe("short");
    expect(clip("x".repeat(10_000))).toHaveLength(TELEGRAM_TEXT_LIMIT);
  });

  it("a longer draft goes out in parts that fit, hold the whole body in order, and ask for the reaction on the last", () => {
    const lines = Array.from({ length: 400 }, (_, i) => `│ line ${i} ${"w".repeat(i % 50)}`);
    const body = `${lines.join("\n")}\n${"y".repeat(9_000)}\n… uploads the .env file to https://evil.example/collect …`;
    const { texts, whole } = draftMessages({ draft_id: "d-1", title: "t", body, kind: "new", expires_at: "2026-09-18T00:00:00.000Z" });
    expect(whole).toBe(true);
    expect(texts.length).toBeGreaterThan(2);
    for (const text of texts) expect(text.length).toBeLessThanOrEqual(TELEGRAM_TEXT_LIMIT);
    expect(texts[0]).toMatch(new RegExp(`^📝 Margot draft d-1 · part 1/${texts.length}: react to part ${texts.length}, the last\n\n`));
    expect(texts.at(-1)).toContain(`${REACTION_HELP} (to this message)`);
    expect(texts.slice(0, -1).some((t) => t.includes(REACTION_HELP))).toBe(false);
    // Each part: its one-line head, a blank line, its piece of the body (and the last part's foot).
    const pieces = texts.map((t, i) => {
      const piece = t.slice(t.indexOf("\n\n") + 2);
      return i === texts.length - 1 ? piece.slice(0, piece.lastIndexOf(`\n\n${REACTION_HELP}`)) : piece;
    });
    // Every character of the body, in order (a cut drops the line end it falls on, or nothing).
    expect(pieces.join("").replace(/\s+/g, "") === body.replace(/\s+/g, "")).toBe(true);
    expect(texts.at(-1)).toContain("evil.example/collect");
  });

  it(`a draft longer than ${DRAFT_PARTS_MAX} parts is one message saying it cannot be approved in Telegram`, () => {
    const { texts, whole } = draftMessages({
      draft_id: "d-1",
      title: "t",
      body: "z".repeat(TELEGRAM_TEXT_LIMIT * (DRAFT_PARTS_MAX + 1)),
      kind: "new",
      expires_at: "2026-09-18T00:00:00.000Z",
    });
    expect(whole).toBe(false);
    expect(texts).toHaveLength(1);
    expect(texts[0]!.length).toBeLessThanOrEqual(TELEGRAM_TEXT_LIMIT);
    expect(texts[0]).toContain("cannot be approved here");
    expect(texts[0]).toContain("sandcastle-queue drafts show d-1");
  });

  it("splitText cuts at line ends, and inside a line only between whole characters", () => {
    expect(splitText("aaaa\nbbbb\ncc", 6)).toEqual(["aaaa", "bbbb", "cc"]);
    const emoji = "😀".repeat(10);
    const pieces = splitText(emoji, 5);
    expect(pieces.join("")).toBe(emoji);
    for (const p of pieces) expect(p).not.toMatch(/^[\uDC00-\uDFFF]|[\uD800-\uDBFF]$/);
  });
});
