// Research follow-ups ("do another deep dive on Y") go to a new research call, not a ticket: the bridge
// appends one JSON line per follow-up to MARGOT_FOLLOW_UP_PATH, and Pi-CEO's side reads the file and starts
// the new research. A durable row store (row-store.ts), on disk before the job completes.
import { z } from "zod";
import { rowSchema, rowStoreOf } from "./row-store.js";

/** Longest follow-up request written (the asking sentences, redacted). */
export const FOLLOW_UP_REQUEST_MAX = 2000;

export const FollowUpRow = rowSchema({
  interaction_id: z.string().min(1),
  originating_session_id: z.string().min(1),
  originated_at: z.string().min(1),
  /** The sentences that ask for more research, PII- and secret-redacted. */
  request: z.string().min(1).max(FOLLOW_UP_REQUEST_MAX),
});
export type FollowUpRow = z.infer<typeof FollowUpRow>;
export type FollowUpRequest = Omit<FollowUpRow, "ts">;

export class FollowUpLog extends rowStoreOf(FollowUpRow) {}
