// Where a finished run's SandcastleRunResult lives (ADR 0010): an ok run's is the job's return value; a run
// that did not end ok is a failed job (so Bull Board tells the truth), and BullMQ keeps no return value
// for those, so its result is a field of the job's own hash: it lives and goes exactly with the job.
import type { Job, Queue } from "bullmq";
import type { RedisClient } from "../src/redis/connect.js";
import { bareResult, RUN_PHASES, RunProgress, SandcastleRunResult, type RunPhase } from "../src/sandcastle/contract.js";

/** The field of a job's hash that holds the result of a run that did not end ok. */
export const RUN_RESULT_FIELD = "scq_result";
/** BullMQ's failedReason for a job whose worker vanished (ADR 0003). */
export const STALLED_REASON = "job stalled more than allowable limit";

export function runProgress(phase: RunPhase): RunProgress {
  return { phase, at: new Date().toISOString() };
}

/** A job's phase from its progress; a job no worker has touched yet is "queued". */
export function runPhase(progress: unknown): RunPhase {
  const parsed = RunProgress.safeParse(progress);
  return parsed.success ? parsed.data.phase : RUN_PHASES[0];
}

/** The failed job's reason, one line: "<status>: <reason> — <message>". */
export function failedRunReason(result: SandcastleRunResult): string {
  const reason = result.failure_reason ?? result.skip_reason ?? "unknown";
  return `${result.status}: ${reason}${result.message ? ` — ${result.message}` : ""}`;
}

/** Written while the job is still active, before it moves to failed: a watcher that hears "failed" finds it. */
export async function storeRunResult(redis: RedisClient, queue: Queue, result: SandcastleRunResult): Promise<void> {
  await redis.hset(queue.toKey(result.run_id), RUN_RESULT_FIELD, JSON.stringify(result));
}

/** The result a lost run (its worker died; ADR 0003) ends with. */
export function lostRunResult(runId: string, branch: string): SandcastleRunResult {
  return {
    ...bareResult(runId, branch),
    status: "failed",
    duration_seconds: 0,
    audit_row_count: 1,
    skip_reason: null,
    failure_reason: "worker_lost",
    exit_code: null,
    message: "the worker running it died or lost its lock; the run is not re-run",
  };
}

/**
 * The SandcastleRunResult of a finished run job, or null when it has none (an invalid payload, a job
 * that is not finished). A lost run's result may not be stored yet when its failure is heard: it is known.
 */
export async function readRunResult(redis: RedisClient, queue: Queue, job: Job): Promise<SandcastleRunResult | null> {
  if (job.finishedOn === undefined) return null;
  if (job.returnvalue !== null && job.returnvalue !== undefined) {
    const ok = SandcastleRunResult.safeParse(job.returnvalue);
    return ok.success ? ok.data : null;
  }
  const raw = await redis.hget(queue.toKey(String(job.id)), RUN_RESULT_FIELD);
  if (raw !== null) {
    const stored = SandcastleRunResult.safeParse(JSON.parse(raw));
    if (stored.success) return stored.data;
  }
  if (job.failedReason === STALLED_REASON) {
    const branch = typeof job.data?.branch === "string" ? job.data.branch : "";
    return lostRunResult(String(job.id), branch);
  }
  return null;
}
