// The Margot intents ledger (MARGOT_LEDGER_PATH): one JSON line per outcome, for the lessons engine to
// learn from. A durable row store (row-store.ts): an append resolves only once its row is on disk.
import { z } from "zod";
import { Classification } from "../contract.js";
import { rowSchema, rowStoreOf } from "./row-store.js";

export const LedgerOutcome = z.enum(["informational", "follow_up", "suppressed", "drafted", "queued_rate_limit", "accepted", "rejected", "expired"]);
export type LedgerOutcome = z.infer<typeof LedgerOutcome>;

/** What the lessons engine reads of an outcome, and `reason` (the machine reason, when the outcome has one). */
export const LedgerRow = rowSchema({
  interaction_id: z.string().min(1),
  classification: Classification,
  confidence: z.number().min(0).max(1),
  outcome: LedgerOutcome,
  linear_issue_id: z.string().min(1).optional(),
  draft_id: z.string().min(1).optional(),
  reason: z.string().min(1).optional(),
});
export type LedgerRow = z.infer<typeof LedgerRow>;
export type LedgerEntry = Omit<LedgerRow, "ts">;

export class MargotLedger extends rowStoreOf(LedgerRow) {}
