// The Telegram review channel: drafts and notices go to REVIEW_CHAT_ID through the Bot API's
// sendMessage (POST {TELEGRAM_API_BASE}/bot<token>/sendMessage, JSON body; the answer is
// {"ok": true, "result": Message} or {"ok": false, "error_code", "description", "parameters"?}).
// Reactions come back as `message_reaction` updates on the webhook (telegram-updates.ts).
//
// Plain text (no parse_mode): a research body full of `_`, `*` and backticks must not break
// Markdown parsing. Messages are capped at Telegram's 4096 characters.
import type { Logger } from "../log.js";
import { ReviewChannelError, type DraftMessage, type MessageRef, type ReviewChannel } from "./review-channel.js";

/** Telegram's limit for one message's text. */
export const TELEGRAM_TEXT_LIMIT = 4096;
const TRUNCATED = "\n… (truncated; the full body goes into the Linear issue)";
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

export function draftText(message: DraftMessage): string {
  const lead =
    message.kind === "resurfaced"
      ? `⏰ Deferred Margot draft ${message.draft_id} is back`
      : message.kind === "resent"
        ? `📝 Margot draft ${message.draft_id} (re-sent: an earlier send may have arrived unconfirmed; react to this message)`
        : `📝 Margot draft ${message.draft_id}`;
  const head = `${lead}\n${REACTION_HELP}\nExpires ${message.expires_at} unless someone reacts.\n\n`;
  return clip(head + message.body);
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
    const result = await this.send({ text: draftText(message) });
    return { channel: "telegram", chat_id: String(result.chat?.id ?? this.options.chatId), message_id: result.message_id ?? null };
  }

  async postNotice(text: string, replyTo?: MessageRef): Promise<void> {
    const reply = replyTo?.channel === "telegram" && replyTo.message_id !== null ? { reply_parameters: { message_id: replyTo.message_id, allow_sending_without_reply: true } } : {};
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
