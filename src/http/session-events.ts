// GET /v1/sessions/:id/logs as Server-Sent Events: the stored backlog, then live lines as a run writes them.
//   retry: 3000       first: how long an EventSource waits before reconnecting
//   (unnamed) event   one log line; id "<entry>/<line>" (Last-Event-ID resumes after it); the service's own start with RS
//                     (U+001E), an agent's hold no control character (ADR 0045)
//   run-queued | run-started | run-ended   a run's milestones (data: the marker JSON)
//   end               the runs have ended (or ?run_id=R has): nothing more will come; the server closes
// A client that reconnects after `end` gets 204, which tells an EventSource to stop reconnecting.
// A run's `ended` marker is written when its result is known, a moment before BullMQ moves its job to
// completed or failed: `run-ended` (and `end`) wait for that move, so a client that reads the job as soon as
// the stream ends finds the result there.
// Each client holds a Redis connection of its own (XREAD BLOCK), so their number is bounded.
import type { Queue } from "bullmq";
import type { Request, RequestHandler, Response } from "express";
import type { Logger } from "../log.js";
import { createRedisClient, type RedisClient } from "../redis/connect.js";
import type { RedisTarget } from "../redis/target.js";
import { SessionId } from "../sandcastle/contract.js";
import { RunId } from "../sandcastle/retention/retained-runs.js";
import { followSessionLog, logNamesRun, parseCursor, type LogCursor, type SessionLogEvent } from "../session-log/session-log-follow.js";
import { sessionLogKey } from "../session-log/session-log.js";
import { storedLine } from "../session-log/service-lines.js";
import { sendProblem } from "./problem.js";

const KEEPALIVE_MS = 15_000;
/** What `retry:` tells an EventSource: the browsers' own default, said out loud. */
export const SSE_RETRY_MS = 3000;
/**
 * How long `run-ended` waits for its job to be finished. Normally milliseconds; a worker that died between
 * the marker and the move leaves the job active until it is declared lost, and the stream does not wait for that.
 */
const RESULT_WAIT_MS = 30_000;

export interface SessionEventsDeps {
  readonly target: RedisTarget;
  /** Plain commands (existence checks). */
  readonly redis: RedisClient;
  readonly prefix: string;
  /** The sandcastle-run queue: whether a run exists, and when its job has finished. */
  readonly runs: Queue;
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
      // As stored (a service line starts with RS); a line an older version stored with raw controls is shown too.
      return sseEvent({ id: e.id, data: storedLine(e.text) });
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

/** Resolves once the run's job is completed or failed (or gone), or after RESULT_WAIT_MS; at once for an old marker. */
async function jobFinished(runs: Queue, runId: string, markerId: string): Promise<void> {
  const writtenAt = Number(markerId.split("-")[0]);
  if (Date.now() - writtenAt > RESULT_WAIT_MS) return;
  const deadline = Date.now() + RESULT_WAIT_MS;
  for (let pause = 5; Date.now() < deadline; pause = Math.min(pause * 2, 200)) {
    const state = await runs.getJobState(runId);
    if (state === "completed" || state === "failed" || state === "unknown") return;
    await new Promise((r) => setTimeout(r, pause));
  }
}

export function sessionEventsHandler(deps: SessionEventsDeps): RequestHandler & { readonly clients: () => number } {
  let clients = 0;
  const handler = async (req: Request, res: Response): Promise<void> => {
    const id = SessionId.safeParse(req.params.id);
    if (!id.success) {
      const problem = id.error.issues[0]?.message ?? "is not a session id";
      return sendProblem(res, "invalid_request", `session id ${problem}`, [{ field: "id", problem }]);
    }
    const rawRunId = req.query.run_id;
    if (Array.isArray(rawRunId))
      return sendProblem(res, "invalid_request", "run_id is given more than once: give one run, or none to follow the session", [
        { field: "run_id", problem: "is given more than once" },
      ]);
    let runId: string | undefined;
    if (rawRunId !== undefined && rawRunId !== "") {
      const parsed = RunId.safeParse(rawRunId);
      if (!parsed.success)
        return sendProblem(res, "invalid_request", "run_id must be a run id: run-<uuid>", [{ field: "run_id", problem: "must be a run id: run-<uuid>" }]);
      runId = parsed.data;
    }
    const lastEventId = req.get("last-event-id") ?? (typeof req.query.last_event_id === "string" ? req.query.last_event_id : undefined);
    let resumeAfter: LogCursor | null = null;
    if (lastEventId !== undefined && lastEventId !== "") {
      resumeAfter = parseCursor(lastEventId);
      if (resumeAfter === null) {
        return sendProblem(res, "invalid_request", 'Last-Event-ID takes an id this stream sent ("<entry id>/<line>")', [
          { field: "Last-Event-ID", problem: "is not an id of this stream" },
        ]);
      }
    }
    const key = sessionLogKey(deps.prefix, id.data);
    if ((await deps.redis.exists(key)) === 0) {
      return sendProblem(res, "unknown_session", `no session log for ${id.data}: no run of that session was enqueued here, or its log expired`);
    }
    if (runId !== undefined) {
      // A run this session never had would be waited for forever.
      const job = await deps.runs.getJob(runId);
      const ofSession = job !== undefined ? job.data?.session_id === id.data : await logNamesRun(deps.redis, key, runId);
      if (!ofSession) return sendProblem(res, "unknown_run", `no run ${runId} in session ${id.data}`);
    }
    if (clients >= deps.maxClients) {
      res.setHeader("Retry-After", "5");
      return sendProblem(res, "too_many_log_readers", `${deps.maxClients} live log readers already (SCQ_SSE_MAX_CLIENTS); retry later`);
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
      res.writeHead(200, {
        "Content-Type": "text/event-stream; charset=utf-8",
        "Cache-Control": "no-store",
        Connection: "keep-alive",
        "X-Accel-Buffering": "no",
      });
      res.write(`retry: ${SSE_RETRY_MS}\n\n`);
    };
    try {
      await reader.connect();
      const events = followSessionLog(reader, key, {
        after: resumeAfter,
        blockMs: deps.keepAliveMs ?? KEEPALIVE_MS,
        ...(runId !== undefined ? { runId } : {}),
      });
      for await (const e of events) {
        if (closed) break;
        // Resumed after the end: nothing new, and nothing will come. 204 stops an EventSource from retrying.
        if (e.kind === "end" && !started && resumeAfter !== null) {
          res.status(204).end();
          return;
        }
        start();
        if (e.kind === "marker" && e.marker.event === "ended") await jobFinished(deps.runs, e.marker.run_id, e.id.split("/")[0]!);
        const text = render(e);
        if (text !== null && !res.write(text)) await new Promise<void>((r) => res.once("drain", () => r()));
        if (e.kind === "end") break;
      }
      start();
      res.end();
    } catch (err) {
      if (!closed) {
        deps.log.warn({ session_id: id.data, err: (err as Error).message }, "a live log reader stopped: Redis failed");
        if (!started) sendProblem(res, "unavailable", "Redis does not answer");
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
