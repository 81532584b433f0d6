// The Margot intents ledger (MARGOT_LEDGER_PATH, seed: "State files"): one JSON line per outcome,
// for the lessons engine. Append-only, whole lines even with several writer processes, and durable:
// an append resolves only after an fdatasync that began after its write; concurrent appends share
// them (group commit, jsonl-appender.ts).
import { readFile } from "node:fs/promises";
import { z } from "zod";
import { JsonlAppender, parseJsonl } from "../audit/jsonl-appender.js";
import { isoTime } from "../iso-time.js";
import { Classification } from "./contract.js";

export const LedgerOutcome = z.enum(["informational", "follow_up", "suppressed", "drafted", "queued_rate_limit", "accepted", "rejected", "expired"]);
export type LedgerOutcome = z.infer<typeof LedgerOutcome>;

/** The seed's fields, plus `reason` (the machine reason, when the outcome has one). */
export const LedgerRow = z
  .object({
    ts: z.iso.datetime({ offset: true }),
    interaction_id: z.string().min(1),
    classification: Classification,
    confidence: z.number().min(0).max(1),
    outcome: LedgerOutcome,
    linear_issue_id: z.string().min(1).optional(),
    draft_id: z.string().min(1).optional(),
    reason: z.string().min(1).optional(),
  })
  .strict();
export type LedgerRow = z.infer<typeof LedgerRow>;
export type LedgerEntry = Omit<LedgerRow, "ts">;

export class MargotLedger {
  private readonly appender: JsonlAppender;

  constructor(readonly path: string) {
    this.appender = new JsonlAppender(path);
  }

  /** Validates, then appends one row and waits for it to be on disk; rejects (so the job is not marked done) when the disk refuses. */
  async append(entry: LedgerEntry, now = Date.now()): Promise<LedgerRow> {
    const row = LedgerRow.parse({ ts: isoTime(now), ...stripUndefined(entry) });
    await this.appender.append(row);
    return row;
  }

  close(): Promise<void> {
    return this.appender.close();
  }
}

/** Every parseable row of a ledger file (a torn tail is skipped). */
export async function readLedger(path: string): Promise<LedgerRow[]> {
  let text: string;
  try {
    text = await readFile(path, "utf8");
  } catch (err) {
    if ((err as NodeJS.ErrnoException).code === "ENOENT") return [];
    throw err;
  }
  return parseJsonl(text).flatMap((row) => {
    const parsed = LedgerRow.safeParse(row);
    return parsed.success ? [parsed.data] : [];
  });
}

function stripUndefined<T extends object>(value: T): T {
  return Object.fromEntries(Object.entries(value).filter(([, v]) => v !== undefined)) as T;
}
