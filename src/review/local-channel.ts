// The review channel for setups without Telegram: drafts wait in Redis, where
// `sandcastle-queue drafts list` shows them and `drafts react` decides them. Notices are kept in
// the draft store's notice list (the bridge records every notice there, whatever the channel).
import type { Logger } from "../log.js";
import type { DraftMessage, MessageRef, ReviewChannel } from "./review-channel.js";

export class LocalReviewChannel implements ReviewChannel {
  readonly kind = "local" as const;

  constructor(private readonly log: Logger) {}

  async postDraft(message: DraftMessage): Promise<MessageRef> {
    this.log.info({ draft_id: message.draft_id, kind: message.kind }, "draft waiting for review: `sandcastle-queue drafts list`, then `drafts react`");
    return { channel: "local", chat_id: null, message_id: null, shown_whole: true };
  }

  async postNotice(text: string): Promise<void> {
    this.log.info({ notice: text }, "review notice");
  }
}
