// GET /v1/sessions/:id/logs as Server-Sent Events: the stored backlog, then live lines as a run writes them.
//   (unnamed) event   one log line; id "<entry>/<line>" (Last-Event-ID resumes after it)
//   run-queued | run-started | run-ended   a run's milestones (data: the marker JSON)
//   end               the runs have ended (or ?run_id=R has): nothing more will come; the server closes
// A client that reconnects after `end` gets 204, which tells an EventSource to stop reconnecting.
// Each client holds a Redis connection of its own (XREAD BLOCK), so their number is bounded.
import type { Request, RequestHandler, Response } from "express";
import type { Logger } from "../log.js";
import { createRedisClient, type RedisClient } from "../redis/connect.js";
import type { RedisTarget } from "../redis/target.js";
import { SessionId } from "../sandcastle/contract.js";
import { followSessionLog, parseCursor, type LogCursor, type SessionLogEvent } from "../sandcastle/session-log-follow.js";
import { sessionLogKey } from "../sandcastle/session-log.js";

const KEEPALIVE_MS = 15_000;

export interface SessionEventsDeps {
  readonly target: RedisTarget;
  /** Plain commands (existence checks). */
  readonly redis: RedisClient;
  readonly prefix: string;
  readonly maxClients: number;
  readonly log: Logger;
  readonly keepAliveMs?: number;
}

/** One SSE event; a line holding CR becomes several data fields (SSE cannot carry CR or LF inside one). */
export function sseEvent(fields: { event?: string; id?: string; data: string }): string {
  let out = "";
  if (fields.event) out += `event: ${fields.event}\n`;
  if (fields.id) out += `id: ${fields.id}\n`;
  for (const part of fields.data.split(/\r\n|\r|\n/)) out += `data: ${part}\n`;
  return `${out}\n`;
}

function render(e: SessionLogEvent): string | null {
  switch (e.kind) {
    case "line":
      return sseEvent({ id: e.id, data: e.text });
    case "marker":
      return sseEvent({ event: `run-${e.marker.event}`, id: e.id, data: JSON.stringify(e.marker) });
    case "end":
      return sseEvent({ event: "end", data: JSON.stringify({ runs: e.runs }) });
    case "idle":
      return ": keep-alive\n\n";
    case "caught_up":
      return null;
  }
}

export function sessionEventsHandler(deps: SessionEventsDeps): RequestHandler & { readonly clients: () => number } {
  let clients = 0;
  const handler = async (req: Request, res: Response): Promise<void> => {
    const id = SessionId.safeParse(req.params.id);
    if (!id.success) {
      res.status(400).json({ error: "invalid_request", message: `session id ${id.error.issues[0]?.message ?? "is invalid"}`, problems: [{ field: "id", problem: id.error.issues[0]?.message ?? "invalid" }] });
      return;
    }
    const runId = typeof req.query.run_id === "string" && req.query.run_id.length > 0 ? req.query.run_id : undefined;
    const lastEventId = req.get("last-event-id") ?? (typeof req.query.last_event_id === "string" ? req.query.last_event_id : undefined);
    let resumeAfter: LogCursor | null = null;
    if (lastEventId !== undefined && lastEventId !== "") {
      resumeAfter = parseCursor(lastEventId);
      if (resumeAfter === null) {
        res.status(400).json({ error: "invalid_request", message: 'Last-Event-ID takes an id this stream sent ("<entry id>/<line>")', problems: [{ field: "Last-Event-ID", problem: "is not an id of this stream" }] });
        return;
      }
    }
    const key = sessionLogKey(deps.prefix, id.data);
    if ((await deps.redis.exists(key)) === 0) {
      res.status(404).json({ error: "unknown_session", message: `no session log for ${id.data}: no run of that session was enqueued here, or its log expired` });
      return;
    }
    if (clients >= deps.maxClients) {
      res.setHeader("Retry-After", "5");
      res.status(503).json({ error: "too_many_log_readers", message: `${deps.maxClients} live log readers already (SCQ_SSE_MAX_CLIENTS); retry later` });
      return;
    }
    clients += 1;
    const reader = createRedisClient(deps.target, "producer");
    reader.on("error", () => {});
    let closed = false;
    const stop = () => {
      closed = true;
      // A blocked XREAD cannot be cancelled: dropping the connection ends it.
      reader.disconnect();
    };
    res.on("close", stop);
    let started = false;
    const start = () => {
      if (started) return;
      started = true;
      res.writeHead(200, { "Content-Type": "text/event-stream; charset=utf-8", "Cache-Control": "no-store", Connection: "keep-alive", "X-Accel-Buffering": "no" });
      res.flushHeaders();
    };
    try {
      await reader.connect();
      const events = followSessionLog(reader, key, { after: resumeAfter, blockMs: deps.keepAliveMs ?? KEEPALIVE_MS, ...(runId !== undefined ? { runId } : {}) });
      for await (const e of events) {
        if (closed) break;
        // Resumed after the end: nothing new, and nothing will come. 204 stops an EventSource from retrying.
        if (e.kind === "end" && !started && resumeAfter !== null) {
          res.status(204).end();
          return;
        }
        start();
        const text = render(e);
        if (text !== null && !res.write(text)) await new Promise<void>((r) => res.once("drain", () => r()));
        if (e.kind === "end") break;
      }
      start();
      res.end();
    } catch (err) {
      if (!closed) {
        deps.log.warn({ session_id: id.data, err: (err as Error).message }, "a live log reader stopped: Redis failed");
        if (!started) res.status(503).json({ error: "unavailable", message: "Redis does not answer" });
        else res.end();
      }
    } finally {
      clients -= 1;
      res.off("close", stop);
      reader.disconnect();
    }
  };
  return Object.assign(handler, { clients: () => clients });
}
