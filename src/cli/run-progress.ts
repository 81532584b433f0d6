// `enqueue sandcastle-run --wait` on a terminal: the run's phases and every line of its run on stderr, in order,
// ending with the run's own closing line (`── run ok: …`), before the result goes to stdout.
// The lines are the session log's, followed live on a connection of their own (XREAD BLOCK holds it) from the
// run's first marker to its `ended` marker. The worker writes that marker after the run's last line and before
// BullMQ finishes the job, so once the job has finished every line is in the log: the result waits for the
// follower to reach the marker (bounded), never for the next poll.
import type { Job } from "bullmq";
import { runPhase } from "../../queues/index.js";
import { createRedisClient } from "../redis/connect.js";
import type { RedisTarget } from "../redis/target.js";
import { followSessionLog } from "../session-log/session-log-follow.js";
import { sessionLogKey } from "../session-log/session-log.js";
import { displayLine } from "../session-log/service-lines.js";

/** How long the result waits for the run's last lines once its job has finished (normally milliseconds). */
const LAST_LINES_WAIT_MS = 5000;
/** One XREAD's wait: how soon a stopped follower notices. */
const BLOCK_MS = 1000;

export interface RunProgress {
  /** Each poll of the wait: the run's phase, printed when it changes. */
  onPoll(job: Job, state: string): Promise<void>;
  /** The job has finished: resolves once the run's last line is printed (or the bound has passed, said so). */
  finish(): Promise<void>;
  /** The wait ended otherwise (timed out, job removed): stop following. */
  stop(): void;
}

export interface RunProgressOptions {
  readonly target: RedisTarget;
  readonly prefix: string;
  readonly runId: string;
  readonly sessionId: string;
  readonly write?: (text: string) => void;
}

export function runProgress(opts: RunProgressOptions): RunProgress {
  const write = opts.write ?? ((text: string) => void process.stderr.write(text));
  const { runId, sessionId } = opts;
  const reader = createRedisClient(opts.target, "producer");
  reader.on("error", () => {});
  let stopped = false;
  let lastPhase = "";

  const following = (async () => {
    await reader.connect();
    // The session's log may hold earlier runs: lines count from this run's first marker (queued, or started).
    let ours = false;
    for await (const e of followSessionLog(reader, sessionLogKey(opts.prefix, sessionId), { after: null, runId, blockMs: BLOCK_MS })) {
      if (stopped) return;
      if (e.kind === "marker" && e.marker.run_id === runId) ours = true;
      else if (e.kind === "line" && ours) write(`  ${displayLine(e.text)}\n`);
      else if (e.kind === "end") return;
    }
  })().catch((err: unknown) => {
    if (!stopped) write(`[${runId}] the live log stopped (${(err as Error).message}); \`sandcastle-queue logs ${sessionId}\` shows every line\n`);
  });

  const stop = () => {
    stopped = true;
    // A blocked XREAD cannot be cancelled: dropping the connection ends it.
    reader.disconnect();
  };

  return {
    onPoll: async (job, state) => {
      const phase = state === "active" ? runPhase(job.progress) : state;
      if (phase === lastPhase) return;
      lastPhase = phase;
      write(`[${runId}] ${phase}\n`);
    },
    finish: async () => {
      let timer: NodeJS.Timeout | undefined;
      const late = await Promise.race([following.then(() => false), new Promise<boolean>((r) => (timer = setTimeout(() => r(true), LAST_LINES_WAIT_MS)))]);
      clearTimeout(timer);
      if (late)
        write(`[${runId}] its last log lines did not arrive within ${LAST_LINES_WAIT_MS / 1000} s; \`sandcastle-queue logs ${sessionId}\` shows every line\n`);
      stop();
    },
    stop,
  };
}
