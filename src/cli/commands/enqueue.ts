// `enqueue <queue> --request|--completion FILE|- [--wait]`: validate, enqueue, optionally wait for the result.
// stdout: the job line, then (with --wait) the result as the last line; a run's phases and log lines go to stderr,
// on a terminal only (run-progress.ts), all of them before the result.
import { isAbsolute, resolve } from "node:path";
import { QueueEvents, type Queue } from "bullmq";
import {
  enqueueResearchCompletion,
  enqueueRun,
  runRequestPaths,
  MARGOT_INTENT_QUEUE,
  readRunResult,
  SANDCASTLE_RUN_QUEUE,
} from "../../../queues/index.js";
import { AuditLog } from "../../audit/audit-log.js";
import { AppError } from "../../errors.js";
import { createRedactor } from "../../redact/index.js";
import { RunSlots } from "../../sandcastle/worker/run-slots.js";
import { bullConnection } from "../../redis/connect.js";
import { readJsonSource } from "../input.js";
import { escapeControlsInJson } from "../../session-log/visible-controls.js";
import { runProgress } from "../run-progress.js";
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
      process.stdout.write(`${escapeControlsInJson(JSON.stringify(outcome.skipped))}\n`);
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
    process.stderr.write(
      `sandcastle-queue: no worker is connected to ${queueName}: job ${jobId} waits until one starts (\`sandcastle-queue start\` or \`worker\`)\n`,
    );
  }
  const progress =
    process.stderr.isTTY && sessionId !== null ? runProgress({ target: rt.site.target, prefix: rt.config.SCQ_KEY_PREFIX, runId: jobId, sessionId }) : undefined;
  if (progress) rt.shutdown.add("live log", () => progress.stop());
  const outcome = await waitForJob(queue, events, jobId, {
    ...(opts.waitTimeout !== undefined ? { timeoutMs: opts.waitTimeout * 1000 } : {}),
    ...(progress ? { onPoll: progress.onPoll } : {}),
  });
  // The run's last lines (and its closing `── run …` line) before its result; a wait that ended otherwise stops following.
  if (outcome.kind === "finished") await progress?.finish();
  else progress?.stop();
  if (outcome.kind === "removed") throw new AppError("invalid_input", `job ${jobId} was removed before it finished (cancelled?)`);
  if (outcome.kind === "timeout") {
    const follow =
      sessionId !== null
        ? `follow it with \`sandcastle-queue logs ${sessionId}\`, stop it with \`sandcastle-queue cancel ${jobId}\``
        : "see `sandcastle-queue status`";
    process.stderr.write(
      `sandcastle-queue: gave up waiting after ${opts.waitTimeout} s: job ${jobId} is still ${outcome.state} and will ${outcome.state === "active" ? "finish" : "run when a worker takes it"}; ${follow}\n`,
    );
    return EXIT_STILL_PENDING;
  }
  const { job } = outcome;
  const result =
    queue === rt.queues.sandcastleRun ? await readRunResult(rt.redis, queue, job) : outcome.state === "completed" ? (job.returnvalue as unknown) : null;
  if (result !== null && result !== undefined) {
    // It quotes the agent (log_tail, messages): whatever JSON leaves raw is escaped, so a terminal obeys none of it.
    process.stdout.write(`${escapeControlsInJson(JSON.stringify(result))}\n`);
    return 0;
  }
  throw new AppError("invalid_input", `job ${jobId} failed: ${job.failedReason ?? "no reason recorded"}`);
}
