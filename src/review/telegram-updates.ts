// Reading Telegram webhook updates (the Bot API's `Update` object) into draft reactions. Pure.
//
// Two ways to react to a draft message in REVIEW_CHAT_ID:
//   - a reaction (`message_reaction` update: {chat, message_id, user?, date, old_reaction,
//     new_reaction}); only an emoji that was added counts (reactions.ts says which emoji mean what).
//   - a reply to the draft message (`message` update with `reply_to_message`), whose text starts
//     with an emoji (👍 ❌ 👎 ⏳) or a command (/approve, /reject <reason>, /defer; "/reject@Bot"
//     works too). A reply is the way to give a rejection reason.
// Everything else (other chats, other updates, removed reactions) is ignored.
import { z } from "zod";
import { bareEmoji, REACTION_EMOJI, reactionForEmoji, REACTIONS, type Reaction } from "./reactions.js";

/** A command naming a reaction: "/approve", "/reject@MargotBot <reason>". */
const COMMAND = new RegExp(String.raw`^\/(${REACTIONS.join("|")})(?:@\w+)?(?:\s+([\s\S]*))?$`, "i");

/** "/reject@MargotBot too risky" → reject, "too risky"; "❌ wrong repo" → reject, "wrong repo". */
export function reactionForText(text: string): { reaction: Reaction; reason: string | null } | null {
  const trimmed = text.trim();
  const command = COMMAND.exec(trimmed);
  if (command?.[1]) {
    const reaction = REACTIONS.find((r) => r === command[1]!.toLowerCase());
    if (!reaction) return null;
    return { reaction, reason: cleanReason(command[2]) };
  }
  for (const [emoji, reaction] of REACTION_EMOJI) {
    const bare = bareEmoji(trimmed);
    if (bare.startsWith(emoji)) return { reaction, reason: cleanReason(bare.slice(emoji.length)) };
  }
  return null;
}

function cleanReason(text: string | undefined): string | null {
  const reason = (text ?? "").replace(/\s+/g, " ").trim().slice(0, 500);
  return reason === "" ? null : reason;
}

const Chat = z.object({ id: z.union([z.number(), z.string()]), username: z.string().optional() }).passthrough();
const ReactionType = z.object({ type: z.string(), emoji: z.string().optional() }).passthrough();
const User = z.object({ id: z.union([z.number(), z.string()]) }).passthrough();
const MessageReactionUpdated = z
  .object({
    chat: Chat,
    message_id: z.number().int(),
    user: User.optional(),
    old_reaction: z.array(ReactionType).default([]),
    new_reaction: z.array(ReactionType).default([]),
  })
  .passthrough();
const Message = z
  .object({
    message_id: z.number().int(),
    chat: Chat,
    from: User.optional(),
    text: z.string().optional(),
    reply_to_message: z.object({ message_id: z.number().int() }).passthrough().optional(),
  })
  .passthrough();
export const TelegramUpdate = z
  .object({
    update_id: z.number().int().nonnegative(),
    message_reaction: MessageReactionUpdated.optional(),
    message: Message.optional(),
  })
  .passthrough();

export interface UpdateFilter {
  /** REVIEW_CHAT_ID: a numeric id or "@channelname". */
  readonly chatId: string;
  /** TELEGRAM_REVIEWER_IDS; empty = anyone in the chat. */
  readonly reviewerIds: readonly string[];
}

export type ParsedUpdate =
  | {
      readonly kind: "reaction";
      readonly update_id: number;
      readonly chat_id: string;
      readonly message_id: number;
      readonly reaction: Reaction;
      readonly reason: string | null;
      readonly actor: string | null;
    }
  | { readonly kind: "ignore"; readonly update_id: number | null; readonly why: string };

function sameChat(chat: z.infer<typeof Chat>, configured: string): boolean {
  if (String(chat.id) === configured) return true;
  return configured.startsWith("@") && chat.username !== undefined && chat.username.toLowerCase() === configured.slice(1).toLowerCase();
}

export function parseUpdate(body: unknown, filter: UpdateFilter): ParsedUpdate {
  const parsed = TelegramUpdate.safeParse(body);
  if (!parsed.success) return { kind: "ignore", update_id: null, why: "not a Telegram update" };
  const update = parsed.data;
  const ignore = (why: string): ParsedUpdate => ({ kind: "ignore", update_id: update.update_id, why });
  const allowed = (actor: string | null) => filter.reviewerIds.length === 0 || (actor !== null && filter.reviewerIds.includes(actor));

  if (update.message_reaction) {
    const r = update.message_reaction;
    if (!sameChat(r.chat, filter.chatId)) return ignore("another chat");
    const actor = r.user ? String(r.user.id) : null;
    if (!allowed(actor)) return ignore("not a reviewer");
    const before = new Set(r.old_reaction.filter((t) => t.type === "emoji").map((t) => bareEmoji(t.emoji ?? "")));
    const added = r.new_reaction.filter((t) => t.type === "emoji" && !before.has(bareEmoji(t.emoji ?? "")));
    for (const t of added) {
      const reaction = reactionForEmoji(t.emoji ?? "");
      if (reaction)
        return { kind: "reaction", update_id: update.update_id, chat_id: String(r.chat.id), message_id: r.message_id, reaction, reason: null, actor };
    }
    return ignore("no review emoji added");
  }
  if (update.message?.reply_to_message && update.message.text !== undefined) {
    const m = update.message;
    if (!sameChat(m.chat, filter.chatId)) return ignore("another chat");
    const actor = m.from ? String(m.from.id) : null;
    if (!allowed(actor)) return ignore("not a reviewer");
    const read = reactionForText(m.text ?? "");
    if (!read) return ignore("a reply that is not a review command");
    return { kind: "reaction", update_id: update.update_id, chat_id: String(m.chat.id), message_id: m.reply_to_message!.message_id, ...read, actor };
  }
  return ignore("not a reaction or a reply");
}
