// A local HTTP server that speaks the Telegram Bot API's request/response shapes for what the
// bridge uses: POST /bot<token>/sendMessage with a JSON body → {"ok": true, "result": Message}
// or {"ok": false, "error_code", "description", "parameters"?: {"retry_after"}}. Plus builders
// for the Update objects Telegram POSTs to a webhook.
import { createServer, type IncomingMessage, type Server } from "node:http";
import { closeServer, listenOnLoopback, readBody } from "./local-http.js";

export interface SentMessage {
  readonly message_id: number;
  readonly chat_id: string;
  readonly text: string;
  readonly reply_to: number | null;
  readonly body: Record<string, unknown>;
}

export class FakeTelegram {
  readonly token = "123456789:AAFakeTokenForTestsOnly_abcdefghijklmn";
  readonly chatId = "-1001234567890";
  readonly sent: SentMessage[] = [];
  /** Every request as received, for checks on what left the process. */
  readonly raw: string[] = [];
  private server: Server | null = null;
  private nextMessageId = 100;
  private failures: Array<{ status: number; body: Record<string, unknown> }> = [];
  private holds = 0;
  private gate: { opened: Promise<void>; open(): void } | null = null;
  /** sendMessage calls waiting at a closed gate now. */
  atGate = 0;
  url = "";

  async start(): Promise<this> {
    this.server = createServer((req, res) => {
      void this.handle(req).then(({ status, body }) => {
        res.writeHead(status, { "content-type": "application/json" });
        res.end(JSON.stringify(body));
      });
    });
    this.url = await listenOnLoopback(this.server);
    return this;
  }

  async stop(): Promise<void> {
    this.openGate();
    const server = this.server;
    this.server = null;
    await closeServer(server);
  }

  /** The next sendMessage calls fail like Telegram does (429 with retry_after, 500, 400 …). */
  failNext(count: number, status: number, retryAfter?: number): void {
    for (let i = 0; i < count; i++) {
      this.failures.push({
        status,
        body: {
          ok: false,
          error_code: status,
          description: status === 429 ? `Too Many Requests: retry after ${retryAfter ?? 1}` : "Internal Server Error",
          ...(retryAfter !== undefined ? { parameters: { retry_after: retryAfter } } : {}),
        },
      });
    }
  }

  /** The next sendMessage is delivered (recorded) but never answered: a sender cannot know it arrived. */
  holdNext(): void {
    this.holds += 1;
  }

  /** From now on sendMessage calls wait, unanswered, until `openGate` (how many senders run at once shows in `atGate`). */
  closeGate(): void {
    let open = () => {};
    const opened = new Promise<void>((resolve) => (open = resolve));
    this.gate = { opened, open };
  }

  openGate(): void {
    this.gate?.open();
    this.gate = null;
  }

  /** Draft messages (not notices). */
  drafts(): SentMessage[] {
    return this.sent.filter((m) => /Margot draft|Deferred Margot draft/.test(m.text.split("\n")[0] ?? ""));
  }

  notices(): SentMessage[] {
    return this.sent.filter((m) => !this.drafts().includes(m));
  }

  draftMessage(draftId: string): SentMessage | undefined {
    return this.drafts().find((m) => (m.text.split("\n")[0] ?? "").includes(draftId));
  }

  private async handle(req: IncomingMessage): Promise<{ status: number; body: Record<string, unknown> }> {
    const text = await readBody(req);
    this.raw.push(text);
    const match = /^\/bot([^/]+)\/(\w+)$/.exec(req.url ?? "");
    if (!match || req.method !== "POST") return { status: 404, body: { ok: false, error_code: 404, description: "Not Found" } };
    if (match[1] !== this.token) return { status: 401, body: { ok: false, error_code: 401, description: "Unauthorized" } };
    if (match[2] !== "sendMessage") return { status: 404, body: { ok: false, error_code: 404, description: "Not Found: method not found" } };
    let body: Record<string, unknown>;
    try {
      body = JSON.parse(text) as Record<string, unknown>;
    } catch {
      return { status: 400, body: { ok: false, error_code: 400, description: "Bad Request: invalid JSON" } };
    }
    if (this.gate) {
      this.atGate += 1;
      await this.gate.opened;
      this.atGate -= 1;
    }
    const failure = this.failures.shift();
    if (failure) return { status: failure.status, body: failure.body };
    if (String(body.chat_id) !== this.chatId) return { status: 400, body: { ok: false, error_code: 400, description: "Bad Request: chat not found" } };
    if (typeof body.text !== "string" || body.text.length === 0)
      return { status: 400, body: { ok: false, error_code: 400, description: "Bad Request: message text is empty" } };
    if (body.text.length > 4096) return { status: 400, body: { ok: false, error_code: 400, description: "Bad Request: message is too long" } };
    const message_id = this.nextMessageId++;
    const replyTo = (body.reply_parameters as { message_id?: number } | undefined)?.message_id ?? null;
    this.sent.push({ message_id, chat_id: String(body.chat_id), text: body.text, reply_to: replyTo, body });
    if (this.holds > 0) {
      this.holds -= 1;
      return new Promise(() => {});
    }
    return {
      status: 200,
      body: {
        ok: true,
        result: {
          message_id,
          date: Math.floor(Date.now() / 1000),
          chat: { id: Number(this.chatId), type: "supergroup", title: "Review" },
          from: { id: 123456789, is_bot: true, first_name: "Margot" },
          text: body.text,
        },
      },
    };
  }
}

let updateSeq = 500_000;
export const nextUpdateId = () => ++updateSeq;

/** A `message_reaction` update as Telegram sends it to a webhook. */
export function reactionUpdate(opts: {
  chatId: string;
  messageId: number;
  emoji: string;
  userId?: number;
  old?: string[];
  updateId?: number;
}): Record<string, unknown> {
  return {
    update_id: opts.updateId ?? nextUpdateId(),
    message_reaction: {
      chat: { id: Number(opts.chatId), type: "supergroup", title: "Review" },
      message_id: opts.messageId,
      user: { id: opts.userId ?? 42, is_bot: false, first_name: "Founder" },
      date: Math.floor(Date.now() / 1000),
      old_reaction: (opts.old ?? []).map((emoji) => ({ type: "emoji", emoji })),
      new_reaction: [{ type: "emoji", emoji: opts.emoji }],
    },
  };
}

/** A reply to a draft message (how a rejection reason arrives). */
export function replyUpdate(opts: { chatId: string; replyTo: number; text: string; userId?: number; updateId?: number }): Record<string, unknown> {
  return {
    update_id: opts.updateId ?? nextUpdateId(),
    message: {
      message_id: 9000 + (updateSeq % 1000),
      from: { id: opts.userId ?? 42, is_bot: false, first_name: "Founder" },
      chat: { id: Number(opts.chatId), type: "supergroup", title: "Review" },
      date: Math.floor(Date.now() / 1000),
      text: opts.text,
      reply_to_message: { message_id: opts.replyTo, chat: { id: Number(opts.chatId), type: "supergroup" }, date: Math.floor(Date.now() / 1000), text: "…" },
    },
  };
}
