// `enqueue <queue> --request|--completion FILE|- [--wait]`: validate, enqueue, optionally wait for the result.
// stdout: the job line, then (with --wait) the result as the last line; progress goes to stderr, on a terminal only.
import { isAbsolute, resolve } from "node:path";
import { QueueEvents, type Job, type Queue } from "bullmq";
import {
  enqueueResearchCompletion,
  enqueueRun,
  runRequestPaths,
  MARGOT_INTENT_QUEUE,
  readRunResult,
  runPhase,
  SANDCASTLE_RUN_QUEUE,
} from "../../../queues/index.js";
import { AuditLog } from "../../audit/audit-log.js";
import { AppError } from "../../errors.js";
import { createRedactor } from "../../redact/index.js";
import { RunSlots } from "../../sandcastle/run-slots.js";
import { entryLines, sessionLogKey } from "../../sandcastle/session-log.js";
import { bullConnection } from "../../redis/connect.js";
import { readJsonSource } from "../input.js";
import type { Runtime } from "../runtime.js";
import { waitForJob } from "../wait-job.js";

export interface EnqueueOptions {
  request?: string;
  completion?: string;
  wait?: boolean;
  waitTimeout?: number;
}

/** Exit code of `--wait` when the wait ran out and the job is still waiting or active (not a failed run). */
export const EXIT_STILL_PENDING = 2;
const REQUEST_PATHS = ["repo_workdir", "prompt_template_dir"] as const;

/** Relative paths in a request given to the CLI mean "from here": resolved against the CLI's working directory. */
export function resolveRequestPaths(input: unknown, cwd: string): unknown {
  if (input === null || typeof input !== "object" || Array.isArray(input)) return input;
  const out: Record<string, unknown> = { ...(input as Record<string, unknown>) };
  for (const field of REQUEST_PATHS) {
    const value = out[field];
    if (typeof value === "string" && value.length > 0 && !isAbsolute(value)) out[field] = resolve(cwd, value);
  }
  return out;
}

export async function enqueueCommand(rt: Runtime, queueName: string, opts: EnqueueOptions): Promise<number> {
  let jobId: string;
  let queue: Queue;
  let sessionId: string | null = null;
  if (queueName === SANDCASTLE_RUN_QUEUE) {
    if (!opts.request) throw new AppError("invalid_input", "enqueue sandcastle-run needs --request FILE (or - for stdin)");
    const input = resolveRequestPaths(await readJsonSource(opts.request, "the sandcastle-run request"), process.cwd());
    queue = rt.queues.sandcastleRun;
    const audit = new AuditLog(rt.config.AUDIT_LOG_PATH, createRedactor());
    rt.shutdown.add("audit log", () => audit.close());
    const slots = new RunSlots(rt.redis, rt.config.SCQ_KEY_PREFIX, rt.config.MAX_CONCURRENT_SANDCASTLE_RUNS);
    const outcome = await enqueueRun(queue, input, { ...runRequestPaths(rt.config), slots, audit, redis: rt.redis });
    if (outcome.skipped !== null) {
      // Nothing was enqueued; the result is already known.
      process.stdout.write(`${JSON.stringify(outcome.skipped)}\n`);
      return 0;
    }
    jobId = outcome.runId;
    sessionId = outcome.request.session_id;
  } else if (queueName === MARGOT_INTENT_QUEUE) {
    if (!opts.completion) throw new AppError("invalid_input", "enqueue margot-intent needs --completion FILE (or - for stdin)");
    const input = await readJsonSource(opts.completion, "the margot research completion");
    queue = rt.queues.margotIntent;
    jobId = (await enqueueResearchCompletion(queue, input)).jobId;
  } else {
    throw new AppError("invalid_input", `unknown queue "${queueName}": enqueue takes ${SANDCASTLE_RUN_QUEUE} or ${MARGOT_INTENT_QUEUE}`);
  }
  process.stdout.write(`${JSON.stringify({ queue: queueName, job_id: jobId })}\n`);
  if (!opts.wait) return 0;

  const bull = bullConnection(rt.site.target);
  const events = new QueueEvents(queueName, { connection: bull.connection, prefix: rt.config.SCQ_KEY_PREFIX });
  rt.shutdown.add("queue events", async () => {
    await events.close();
    await bull.close();
  });
  await events.waitUntilReady();
  const workers = await queue.getWorkersCount().catch(() => null);
  if (workers === 0) {
    process.stderr.write(`sandcastle-queue: no worker is connected to ${queueName}: job ${jobId} waits until one starts (\`sandcastle-queue start\` or \`worker\`)\n`);
  }
  const watch = process.stderr.isTTY && sessionId !== null ? progressPrinter(rt, jobId, sessionId) : undefined;
  const outcome = await waitForJob(queue, events, jobId, {
    ...(opts.waitTimeout !== undefined ? { timeoutMs: opts.waitTimeout * 1000 } : {}),
    ...(watch ? { onPoll: watch } : {}),
  });
  if (outcome.kind === "removed") throw new AppError("invalid_input", `job ${jobId} was removed before it finished (cancelled?)`);
  if (outcome.kind === "timeout") {
    const follow = sessionId !== null ? `follow it with \`sandcastle-queue logs ${sessionId}\`, stop it with \`sandcastle-queue cancel ${jobId}\`` : "see `sandcastle-queue status`";
    process.stderr.write(`sandcastle-queue: gave up waiting after ${opts.waitTimeout} s: job ${jobId} is still ${outcome.state} and will ${outcome.state === "active" ? "finish" : "run when a worker takes it"}; ${follow}\n`);
    return EXIT_STILL_PENDING;
  }
  const { job } = outcome;
  const result = queue === rt.queues.sandcastleRun ? await readRunResult(rt.redis, queue, job) : outcome.state === "completed" ? (job.returnvalue as unknown) : null;
  if (result !== null && result !== undefined) {
    process.stdout.write(`${JSON.stringify(result)}\n`);
    return 0;
  }
  throw new AppError("invalid_input", `job ${jobId} failed: ${job.failedReason ?? "no reason recorded"}`);
}

/** On a terminal: each phase once, and the session's new log lines, on stderr. */
function progressPrinter(rt: Runtime, jobId: string, sessionId: string): (job: Job, state: string) => Promise<void> {
  let lastPhase = "";
  let lastEntry = "-";
  const key = sessionLogKey(rt.config.SCQ_KEY_PREFIX, sessionId);
  return async (job, state) => {
    const phase = state === "active" ? runPhase(job.progress) : state;
    if (phase !== lastPhase) {
      lastPhase = phase;
      process.stderr.write(`[${jobId}] ${phase}\n`);
    }
    const entries = await rt.redis.xrange(key, lastEntry === "-" ? "-" : `(${lastEntry}`, "+", "COUNT", 200);
    for (const [id, fields] of entries) {
      lastEntry = id;
      for (const line of entryLines(fields)) process.stderr.write(`  ${line}\n`);
    }
  };
}
