// Following a session's log as it is written: the stored backlog, then live entries, one event per line,
// each addressed by a cursor "<stream entry id>/<line index>" (an entry holds a batch of lines), so a
// reader can resume after any line. The follow ends when the runs it knows of have all ended (markers).
import type { RedisClient } from "../redis/connect.js";
import { compareStreamIds, entryLines, entryMarker, type RunMarker } from "./session-log.js";

/** Where a reader stands: after line `line` of entry `entry`. */
export interface LogCursor {
  readonly entry: string;
  readonly line: number;
}

export type SessionLogEvent =
  | { readonly kind: "line"; readonly id: string; readonly text: string }
  | { readonly kind: "marker"; readonly id: string; readonly marker: RunMarker }
  /** The backlog is read; what follows is live. */
  | { readonly kind: "caught_up" }
  /** Nothing new for a while (a chance to send a keep-alive). */
  | { readonly kind: "idle" }
  /** Every run the reader knows of has ended (or `runId` has): nothing more will come. */
  | { readonly kind: "end"; readonly runs: readonly string[] };

const STREAM_ID = /^\d{1,20}-\d{1,20}$/;

export function formatCursor(c: LogCursor): string {
  return `${c.entry}/${c.line}`;
}

/** A Last-Event-ID as sent back by a client, or null when it is not one of ours. */
export function parseCursor(text: string): LogCursor | null {
  const m = /^(\d{1,20}-\d{1,20})\/(\d{1,9})$/.exec(text.trim());
  return m ? { entry: m[1]!, line: Number(m[2]) } : null;
}

function after(entry: string, line: number, cursor: LogCursor | null): boolean {
  if (cursor === null) return true;
  const c = compareStreamIds(entry, cursor.entry);
  return c > 0 || (c === 0 && line > cursor.line);
}

export interface FollowOptions {
  /** Resume after this line (Last-Event-ID); null = from the oldest stored line. */
  readonly after: LogCursor | null;
  /** Follow one run: end when it ends. Unset: end when no run the log names is still open. */
  readonly runId?: string;
  /** How long one XREAD waits before the follower reports "idle". */
  readonly blockMs: number;
  readonly pageSize?: number;
}

/**
 * `redis` must be a connection of its own: XREAD BLOCK holds it. The whole log is read from its start
 * (to know which runs are open) but only events after `opts.after` are yielded.
 */
export async function* followSessionLog(redis: RedisClient, key: string, opts: FollowOptions): AsyncGenerator<SessionLogEvent> {
  const open = new Set<string>();
  const ended: string[] = [];
  let targetEnded = false;
  const pageSize = opts.pageSize ?? 200;

  function* eventsOf(id: string, fields: string[]): Generator<SessionLogEvent> {
    const marker = entryMarker(fields);
    if (marker !== null) {
      if (marker.event === "ended") {
        open.delete(marker.run_id);
        ended.push(marker.run_id);
        if (marker.run_id === opts.runId) targetEnded = true;
      } else {
        open.add(marker.run_id);
      }
      if (after(id, 0, opts.after)) yield { kind: "marker", id: formatCursor({ entry: id, line: 0 }), marker };
      return;
    }
    const lines = entryLines(fields);
    for (let i = 0; i < lines.length; i++) {
      if (after(id, i, opts.after)) yield { kind: "line", id: formatCursor({ entry: id, line: i }), text: lines[i]! };
    }
  }
  const finished = (): boolean => (opts.runId !== undefined ? targetEnded : ended.length > 0 && open.size === 0);

  // The backlog, page by page; only at its end may the follow stop (an older run's end is not the last).
  let last = "0-0";
  for (;;) {
    const page = await redis.xrange(key, last === "0-0" ? "-" : `(${last}`, "+", "COUNT", pageSize);
    for (const [id, fields] of page) {
      yield* eventsOf(id, fields);
      last = id;
    }
    if (page.length < pageSize) break;
  }
  if (finished()) {
    yield { kind: "end", runs: ended };
    return;
  }
  yield { kind: "caught_up" };
  for (;;) {
    const reply = (await redis.xread("COUNT", pageSize, "BLOCK", opts.blockMs, "STREAMS", key, last)) as Array<[string, Array<[string, string[]]>]> | null;
    const entries = reply?.[0]?.[1] ?? [];
    if (entries.length === 0) {
      yield { kind: "idle" };
      continue;
    }
    for (const [id, fields] of entries) {
      if (!STREAM_ID.test(id)) continue;
      yield* eventsOf(id, fields);
      last = id;
      if (finished()) {
        yield { kind: "end", runs: ended };
        return;
      }
    }
  }
}

/** Whether any marker of the log names `runId` (read page by page; the log is capped, so this is bounded). */
export async function logNamesRun(redis: RedisClient, key: string, runId: string, pageSize = 500): Promise<boolean> {
  let last: string | null = null;
  for (;;) {
    const page: Array<[string, string[]]> = await redis.xrange(key, last === null ? "-" : `(${last}`, "+", "COUNT", pageSize);
    for (const [id, fields] of page) {
      if (entryMarker(fields)?.run_id === runId) return true;
      last = id;
    }
    if (page.length < pageSize) return false;
  }
}
