// Where drafts go for a human's reaction: Telegram (Bot API) or the local channel (the CLI).
// A channel only delivers; the draft store decides what a reaction does.
import { ReviewChannelError } from "../errors.js";

export { ReviewChannelError };

export type ChannelKind = "telegram" | "local";

/** Where one posted draft landed, so a reaction on that message finds its draft. */
export interface MessageRef {
  readonly channel: ChannelKind;
  /** Telegram chat id (as a string); null for the local channel. */
  readonly chat_id: string | null;
  readonly message_id: number | null;
  /** Whether the channel showed the draft's whole text (false: approving from the channel is refused; absent on refs stored before). */
  readonly shown_whole?: boolean;
}

export interface DraftMessage {
  readonly draft_id: string;
  readonly title: string;
  /** The ticket body, already PII-redacted. */
  readonly body: string;
  /** new: first post; resent: a retry after a crash mid-send (it may have arrived once already); resurfaced: after a defer. */
  readonly kind: "new" | "resent" | "resurfaced";
  readonly expires_at: string;
}

export interface ReviewChannel {
  readonly kind: ChannelKind;
  postDraft(message: DraftMessage): Promise<MessageRef>;
  /** One line in the channel (queued drafts, outcomes of reactions); `replyTo` threads it under a draft. */
  postNotice(text: string, replyTo?: MessageRef): Promise<void>;
}
