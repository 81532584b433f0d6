// Research follow-ups ("do another deep dive on Y"): the seed routes them to a new research call,
// not a ticket. The bridge appends one JSON line per follow-up to MARGOT_FOLLOW_UP_PATH; Pi-CEO's
// side reads the file and starts the new research. Durable like the ledger: fsynced before the
// job completes.
import { z } from "zod";
import { JsonlAppender } from "../audit/jsonl-appender.js";

/** Longest follow-up request written (the asking sentences, redacted). */
export const FOLLOW_UP_REQUEST_MAX = 2000;

export const FollowUpRow = z
  .object({
    ts: z.iso.datetime({ offset: true }),
    interaction_id: z.string().min(1),
    originating_session_id: z.string().min(1),
    originated_at: z.string().min(1),
    /** The sentences that ask for more research, PII- and secret-redacted. */
    request: z.string().min(1).max(FOLLOW_UP_REQUEST_MAX),
  })
  .strict();
export type FollowUpRow = z.infer<typeof FollowUpRow>;
export type FollowUpRequest = Omit<FollowUpRow, "ts">;

export class FollowUpLog {
  private readonly appender: JsonlAppender;

  constructor(readonly path: string) {
    this.appender = new JsonlAppender(path);
  }

  async append(request: FollowUpRequest, now = new Date()): Promise<FollowUpRow> {
    const row = FollowUpRow.parse({ ts: now.toISOString(), ...request });
    await this.appender.append(row);
    return row;
  }

  close(): Promise<void> {
    return this.appender.close();
  }
}
