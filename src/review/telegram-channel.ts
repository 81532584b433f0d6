// The Telegram review channel: drafts and notices go to REVIEW_CHAT_ID through the Bot API's
// sendMessage (POST {TELEGRAM_API_BASE}/bot<token>/sendMessage, JSON body; the answer is
// {"ok": true, "result": Message} or {"ok": false, "error_code", "description", "parameters"?}).
// Reactions come back as `message_reaction` updates on the webhook (telegram-updates.ts).
//
// Plain text (no parse_mode): a research body full of `_`, `*` and backticks must not break
// Markdown parsing. A message holds at most 4096 characters, so a longer draft goes out in parts, one
// after another, and only the last part is the draft's message: a reaction can land only once the whole
// text is in the chat. A draft longer than DRAFT_PARTS_MAX parts is shown in part and says it cannot be
// approved here (ADR 0040); what reaches Linear is always the whole draft.
import type { Logger } from "../log.js";
import { ReviewChannelError, type DraftMessage, type MessageRef, type ReviewChannel } from "./review-channel.js";

/** Telegram's limit for one message's text. */
export const TELEGRAM_TEXT_LIMIT = 4096;
/** Telegram lets a bot send about 20 messages a minute to one group: a draft takes at most this many. */
export const DRAFT_PARTS_MAX = 12;
const TRUNCATED = "\n… (truncated)";
/** Room kept in each part for its head and the last part's foot. */
const PART_FRAME = 512;
const DEFAULT_TIMEOUT_MS = 15_000;
/** A 429 asking us to wait longer than this is left to the job's own retry. */
const MAX_INLINE_RETRY_AFTER_S = 30;

export interface TelegramChannelOptions {
  readonly apiBase: string;
  readonly token: string;
  readonly chatId: string;
  readonly log: Logger;
  readonly timeoutMs?: number;
  readonly fetch?: typeof fetch;
}

export const REACTION_HELP = "React 👍 approve · 👎 reject · 😴 defer — or reply /approve, /reject <reason>, /defer";

/** The messages one draft goes out as, in order; `whole`: together they show all of its body. */
export interface DraftMessages {
  readonly texts: readonly string[];
  readonly whole: boolean;
}

export function draftMessages(message: DraftMessage): DraftMessages {
  const { draft_id: id, kind } = message;
  const resent = "re-sent: an earlier send may have arrived unconfirmed";
  const lead =
    kind === "resurfaced" ? `⏰ Deferred Margot draft ${id} is back` : kind === "resent" ? `📝 Margot draft ${id} (${resent})` : `📝 Margot draft ${id}`;
  const expires = `Expires ${message.expires_at} unless someone reacts.`;
  const singleLead = kind === "resent" ? `📝 Margot draft ${id} (${resent}; react to this message)` : lead;
  const single = `${singleLead}\n${REACTION_HELP}\n${expires}\n\n${message.body}`;
  if (single.length <= TELEGRAM_TEXT_LIMIT) return { texts: [single], whole: true };
  const chunks = splitText(message.body, TELEGRAM_TEXT_LIMIT - PART_FRAME);
  if (chunks.length > DRAFT_PARTS_MAX) {
    const refusal =
      `⚠ This draft is ${message.body.length} characters: more than Telegram shows in ${DRAFT_PARTS_MAX} messages, so it cannot be approved here. ` +
      `Read it whole with \`sandcastle-queue drafts show ${id}\`, then approve with \`sandcastle-queue drafts react ${id} approve\`. Here 👎 rejects and 😴 defers.`;
    return { texts: [clip(`${lead}\n${refusal}\n${expires}\n\n${message.body}`)], whole: false };
  }
  const n = chunks.length;
  const texts = chunks.map((chunk, i) =>
    i === 0
      ? `${lead} · part 1/${n}: react to part ${n}, the last\n\n${chunk}`
      : i < n - 1
        ? `📝 Margot draft ${id} · part ${i + 1}/${n}\n\n${chunk}`
        : `📝 Margot draft ${id} · part ${n}/${n}, the last\n\n${chunk}\n\n${REACTION_HELP} (to this message)\n${expires}`,
  );
  return { texts, whole: true };
}

/** Pieces of at most `max` characters, cut at a line end where one falls in the second half of a piece (that line end is dropped). */
export function splitText(text: string, max: number): string[] {
  const pieces: string[] = [];
  let start = 0;
  while (text.length - start > max) {
    let cut = text.lastIndexOf("\n", start + max);
    if (cut <= start + max / 2) {
      cut = start + max;
      // Never between the two halves of a surrogate pair.
      if (/[\uD800-\uDBFF]/.test(text[cut - 1] ?? "")) cut -= 1;
      pieces.push(text.slice(start, cut));
      start = cut;
    } else {
      pieces.push(text.slice(start, cut));
      start = cut + 1;
    }
  }
  pieces.push(text.slice(start));
  return pieces;
}

export function clip(text: string): string {
  if (text.length <= TELEGRAM_TEXT_LIMIT) return text;
  return text.slice(0, TELEGRAM_TEXT_LIMIT - TRUNCATED.length) + TRUNCATED;
}

interface TelegramAnswer {
  ok?: boolean;
  result?: { message_id?: number; chat?: { id?: number | string } };
  error_code?: number;
  description?: string;
  parameters?: { retry_after?: number };
}

export class TelegramReviewChannel implements ReviewChannel {
  readonly kind = "telegram" as const;
  private readonly fetchImpl: typeof fetch;

  constructor(private readonly options: TelegramChannelOptions) {
    this.fetchImpl = options.fetch ?? fetch;
  }

  async postDraft(message: DraftMessage): Promise<MessageRef> {
    const { texts, whole } = draftMessages(message);
    let result: NonNullable<TelegramAnswer["result"]> = {};
    // One after another: the last part, the one a reaction goes to, is sent only once the others arrived.
    for (const text of texts) result = await this.send({ text });
    return { channel: "telegram", chat_id: String(result.chat?.id ?? this.options.chatId), message_id: result.message_id ?? null, shown_whole: whole };
  }

  async postNotice(text: string, replyTo?: MessageRef): Promise<void> {
    const reply =
      replyTo?.channel === "telegram" && replyTo.message_id !== null
        ? { reply_parameters: { message_id: replyTo.message_id, allow_sending_without_reply: true } }
        : {};
    await this.send({ text: clip(text), ...reply });
  }

  private async send(fields: Record<string, unknown>): Promise<NonNullable<TelegramAnswer["result"]>> {
    const body = JSON.stringify({ chat_id: this.options.chatId, link_preview_options: { is_disabled: true }, ...fields });
    for (let attempt = 1; ; attempt++) {
      const answer = await this.call("sendMessage", body);
      if (answer.kind === "ok") return answer.result;
      // 429 means Telegram refused it: nothing was sent, so waiting and sending again cannot duplicate.
      if (answer.kind === "rate_limited" && attempt < 3 && answer.retryAfterS <= MAX_INLINE_RETRY_AFTER_S) {
        this.options.log.warn({ retry_after_s: answer.retryAfterS }, "telegram rate limit; waiting");
        await sleep(answer.retryAfterS * 1000);
        continue;
      }
      throw answer.error;
    }
  }

  private async call(
    method: string,
    body: string,
  ): Promise<
    | { kind: "ok"; result: NonNullable<TelegramAnswer["result"]> }
    | { kind: "rate_limited"; retryAfterS: number; error: ReviewChannelError }
    | { kind: "failed"; error: ReviewChannelError }
  > {
    // The URL holds the bot token: it never enters an error message or a log line.
    const url = `${this.options.apiBase.replace(/\/+$/, "")}/bot${this.options.token}/${method}`;
    let res: Response;
    try {
      res = await this.fetchImpl(url, {
        method: "POST",
        headers: { "content-type": "application/json" },
        body,
        signal: AbortSignal.timeout(this.options.timeoutMs ?? DEFAULT_TIMEOUT_MS),
      });
    } catch (err) {
      const why = (err as Error).name === "TimeoutError" ? "timed out" : "could not connect";
      return { kind: "failed", error: new ReviewChannelError(`telegram ${method} ${why}`, true) };
    }
    let answer: TelegramAnswer = {};
    try {
      answer = (await res.json()) as TelegramAnswer;
    } catch {
      // a proxy's HTML error page: judged by the status alone
    }
    if (res.ok && answer.ok === true && answer.result) return { kind: "ok", result: answer.result };
    const code = answer.error_code ?? res.status;
    const description = (answer.description ?? res.statusText ?? "").slice(0, 200);
    const message = `telegram ${method} failed: ${code} ${description}`.trim();
    if (code === 429) {
      return { kind: "rate_limited", retryAfterS: answer.parameters?.retry_after ?? 1, error: new ReviewChannelError(message, true) };
    }
    // 400 (chat not found, bad request), 401 (bad token), 403 (bot removed from the chat): retrying cannot help.
    const retryable = code >= 500 || code === 408 || code === 409;
    return { kind: "failed", error: new ReviewChannelError(message, retryable) };
  }
}

const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));
