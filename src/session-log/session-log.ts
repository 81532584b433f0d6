// A session's log: a capped Redis stream per session_id, written in batches of lines
// (one XADD per line would cost a command, a reply and an fsync per line; a batch shares them: ADR 0005).
import type { RedisClient } from "../redis/connect.js";
import { z } from "zod";
import type { StreamAppender } from "../redis/stream-appender.js";
import { FAILURE_REASONS, RUN_STATUSES, SKIP_REASONS } from "../sandcastle/contract.js";
import { displayLine } from "./service-lines.js";

/** Stream entries kept per session (each holds one batch of lines): a backstop; the byte cap is what binds. */
export const SESSION_LOG_MAXLEN = 100_000;
export const DEFAULT_SESSION_LOG_MAX_BYTES = 16 * 2 ** 20;
/**
 * A batch goes out at 100 lines when Redis is idle; while a write is in flight it grows (Nagle-style) up to
 * 2000 entries or 1 MiB. Big batches matter on an fsync-always Redis: it fsyncs once per command it reads, so
 * fewer, larger writes take a run's output in less time (ADR 0005).
 */
const MIN_BATCH_LINES = 100;
const MAX_BATCH_LINES = 2000;
const MAX_BATCH_CHARS = 1024 * 1024;
/**
 * While a batch is on its way, fewer lines than MIN_BATCH_LINES wait this long for company, no longer (it was 200 ms, a
 * fifth of a second on every quiet line; ADR 0051). With none on its way, a line goes on the next turn of the event
 * loop, with whatever came in the same read (Nagle's rule; ADR 0053): a live reader sees a line after quiet at once.
 */
const FLUSH_MS = 10;
/** Reading pauses beyond this many outstanding batches: at most ~5 MiB of lines wait in memory. */
const MAX_IN_FLIGHT = 4;
export const RETAIN_SECONDS = 14 * 24 * 3600;
/** Lines a job's own log takes before it points to the session log instead. */
export const JOB_LOG_BUDGET_LINES = 20_000;

export function sessionLogKey(prefix: string, sessionId: string): string {
  return `${prefix}:session-log:${sessionId}`;
}

/** One or more lines joined by "\n": as text, or as their UTF-8 bytes (shipped without re-encoding). */
export type LogEntry = string | Buffer;

export type BatchSink = (entries: readonly LogEntry[]) => Promise<unknown>;

const NEWLINE = Buffer.from("\n");

/** The entries' UTF-8 bytes in order, newline-separated, as pieces to be sent back to back (nothing is copied but text). */
export function entryPieces(entries: readonly LogEntry[]): Buffer[] {
  const pieces: Buffer[] = [];
  let text: string[] = [];
  const flushText = () => {
    if (text.length === 0) return;
    pieces.push(Buffer.from(text.join("\n"), "utf8"));
    text = [];
  };
  for (const entry of entries) {
    if (typeof entry === "string") {
      if (text.length === 0 && pieces.length > 0) pieces.push(NEWLINE);
      text.push(entry);
      continue;
    }
    flushText();
    if (pieces.length > 0) pieces.push(NEWLINE);
    pieces.push(entry);
  }
  flushText();
  return pieces;
}

/** The entries as lines of text. */
export function entriesToLines(entries: readonly LogEntry[]): string[] {
  return entries.flatMap((e) => (typeof e === "string" ? e : e.toString("utf8")).split("\n"));
}

/** Batches lines to sinks; reports saturation so the producer of lines can pause. */
export class LineBatcher {
  private batch: LogEntry[] = [];
  private batchChars = 0;
  private timer: NodeJS.Timeout | null = null;
  private inFlight = 0;
  private waiters: Array<() => void> = [];
  private failures = 0;

  constructor(private readonly sinks: readonly BatchSink[]) {}

  get saturated(): boolean {
    return this.inFlight >= MAX_IN_FLIGHT;
  }

  get failedBatches(): number {
    return this.failures;
  }

  write(entry: LogEntry): void {
    this.batch.push(entry);
    this.batchChars += entry.length;
    const n = this.batch.length;
    if (n >= MAX_BATCH_LINES || this.batchChars >= MAX_BATCH_CHARS || (n >= MIN_BATCH_LINES && this.inFlight === 0)) this.flush();
    else this.timer ??= setTimeout(() => this.flush(), this.inFlight === 0 ? 0 : FLUSH_MS);
  }

  flush(): void {
    if (this.timer) {
      clearTimeout(this.timer);
      this.timer = null;
    }
    if (this.batch.length === 0) return;
    const lines = this.batch;
    this.batch = [];
    this.batchChars = 0;
    this.inFlight += 1;
    void Promise.allSettled(this.sinks.map((sink) => sink(lines))).then((results) => {
      // A lost log batch must not fail the run: count it and go on.
      if (results.some((r) => r.status === "rejected")) this.failures += 1;
      this.inFlight -= 1;
      // Nagle's rule: what gathered while Redis was busy goes out as soon as it is free, not at the timer.
      if (this.inFlight === 0 && this.batch.length > 0) this.flush();
      if (this.inFlight < MAX_IN_FLIGHT) for (const w of this.waiters.splice(0)) w();
    });
  }

  /** Resolves when fewer than MAX_IN_FLIGHT batches are outstanding. */
  drained(): Promise<void> {
    if (!this.saturated) return Promise.resolve();
    return new Promise((r) => this.waiters.push(r));
  }

  /** Flush and wait for every batch to land. */
  async close(): Promise<void> {
    this.flush();
    while (this.inFlight > 0) await new Promise<void>((r) => this.waiters.push(r));
  }
}

/**
 * Lines never hold "\n" (the splitter cut on it), so a batch is stored as one newline-joined field: no JSON escaping.
 * The appender is a connection of its own: a 1 MiB write must not queue ahead of BullMQ's lock renewals.
 * The stream keeps the newest `maxBytes` or so of this sink's lines: once over, entries older than that
 * (earlier runs' of the session too) are trimmed by id.
 */
export function sessionLogSink(appender: StreamAppender, key: string, maxBytes = DEFAULT_SESSION_LOG_MAX_BYTES): BatchSink {
  let batches = 0;
  const kept: Array<{ id: string; bytes: number }> = [];
  let keptBytes = 0;
  return async (entries) => {
    const pieces = entryPieces(entries);
    const added = appender.xadd(key, SESSION_LOG_MAXLEN, LINES_FIELD, pieces);
    const expiring = batches++ % 50 === 0 ? appender.expire(key, RETAIN_SECONDS) : null;
    const [id] = await Promise.all([added, expiring]);
    // Batches in flight can resolve out of order: keep `kept` sorted by stream id, oldest first.
    const entry = { id, bytes: pieces.reduce((n, piece) => n + piece.length, 0) };
    let at = kept.length;
    while (at > 0 && compareStreamIds(kept[at - 1]!.id, id) > 0) at -= 1;
    kept.splice(at, 0, entry);
    keptBytes += entry.bytes;
    let trimTo: string | null = null;
    while (keptBytes > maxBytes && kept.length > 1) {
      keptBytes -= kept.shift()!.bytes;
      trimTo = kept[0]!.id;
    }
    if (trimTo !== null) await appender.command(["XTRIM", key, "MINID", trimTo]);
  };
}

/** Orders "ms-seq" stream ids. */
export function compareStreamIds(a: string, b: string): number {
  const [am = 0, as = 0] = a.split("-").map(Number);
  const [bm = 0, bs = 0] = b.split("-").map(Number);
  return am - bm || as - bs;
}

/**
 * The job's own log (Bull Board's Logs tab), bounded per job: every line up to `budgetLines`, as people see it
 * (service-lines.ts), then one pointer to the session log, which keeps everything. Entries may hold several lines.
 */
export function budgetedJobLogSink(append: (text: string) => Promise<unknown>, sessionId: string, budgetLines = JOB_LOG_BUDGET_LINES): BatchSink {
  let written = 0;
  let pointed = false;
  return async (entries) => {
    if (written >= budgetLines) {
      if (pointed) return;
      pointed = true;
      await append(`…[job log stops after ${budgetLines} lines; the full log: sandcastle-queue logs ${sessionId}]`);
      return;
    }
    const lines = entriesToLines(entries);
    const take = lines.length <= budgetLines - written ? lines : lines.slice(0, budgetLines - written);
    written += take.length;
    await append(take.map(displayLine).join("\n"));
  };
}

/** Every stored line of a session, oldest first (already redacted when written). */
export async function readSessionLog(redis: RedisClient, key: string): Promise<string[]> {
  const out: string[] = [];
  let start = "-";
  for (;;) {
    const entries = await redis.xrange(key, start, "+", "COUNT", 500);
    for (const [, fields] of entries) out.push(...entryLines(fields));
    if (entries.length < 500) return out;
    const lastId = entries[entries.length - 1]![0];
    start = `(${lastId}`;
  }
}

/** The field of an entry holding lines ("\n"-joined); a marker entry holds MARKER_FIELD instead. */
export const LINES_FIELD = "lines";
export const MARKER_FIELD = "marker";

/**
 * A run's milestones in its session's log, so that a reader knows which runs are still to come:
 * `queued` (written at enqueue), `started` (its child was spawned), `ended` (its result is known; after its last line).
 */
export const RunMarker = z.discriminatedUnion("event", [
  z.object({ event: z.literal("queued"), run_id: z.string() }),
  z.object({ event: z.literal("started"), run_id: z.string() }),
  z.object({
    event: z.literal("ended"),
    run_id: z.string(),
    status: z.enum(RUN_STATUSES),
    failure_reason: z.enum(FAILURE_REASONS).nullable(),
    skip_reason: z.enum(SKIP_REASONS).nullable(),
  }),
]);
export type RunMarker = z.infer<typeof RunMarker>;

/** The XADD of one marker entry, for any client that sends raw commands (ioredis `call`, the StreamAppender). */
export function markerCommand(key: string, marker: RunMarker): [string, ...string[]] {
  return ["XADD", key, "MAXLEN", "~", String(SESSION_LOG_MAXLEN), "*", MARKER_FIELD, JSON.stringify(marker)];
}

/** The marker an entry holds, or null for a lines entry (or a marker this version cannot read). */
export function entryMarker(fields: readonly string[]): RunMarker | null {
  const i = fields.indexOf(MARKER_FIELD);
  if (i < 0 || i % 2 !== 0) return null;
  try {
    const parsed = RunMarker.safeParse(JSON.parse(fields[i + 1] ?? ""));
    return parsed.success ? parsed.data : null;
  } catch {
    return null;
  }
}

/** The lines an entry holds ([] for a marker entry). */
export function entryLines(fields: readonly string[]): string[] {
  const i = fields.indexOf(LINES_FIELD);
  return i >= 0 && i % 2 === 0 ? (fields[i + 1] ?? "").split("\n") : [];
}
