// Cancelling a run, the one home for it (the CLI's `cancel` and the API's POST /v1/runs/:id/cancel call it):
// a run still waiting is removed before it starts; a running one is stopped wherever it runs (pub/sub to
// its worker: terminate → 5 s → kill), and its result is awaited for a while.
import type { Queue } from "bullmq";
import type { RedisClient } from "../src/redis/connect.js";
import type { AuditLog } from "../src/audit/audit-log.js";
import { z } from "zod";
import { SandcastleRunResult } from "../src/sandcastle/contract.js";
import { publishCancel } from "../src/sandcastle/worker/run-control.js";
import { markerCommand, sessionLogKey } from "../src/session-log/session-log.js";
import { readRunResult } from "./run-outcome.js";

const WAITING_STATES = new Set(["waiting", "delayed", "prioritized", "waiting-children"]);
const DEFAULT_WAIT_FOR_STOP_MS = 15_000;

const AlreadyFinished = z
  .object({ run_id: z.string(), outcome: z.literal("already_finished"), state: z.enum(["completed", "failed"]), result: SandcastleRunResult.nullable() })
  .strict();
/** A run still waiting, removed before it started; `state` is where it waited. */
const Removed = z.object({ run_id: z.string(), outcome: z.literal("removed"), state: z.string() }).strict();
const Stopped = z
  .object({ run_id: z.string(), outcome: z.literal("stopped"), state: z.enum(["completed", "failed"]), result: SandcastleRunResult.nullable() })
  .strict();
/** Asked, but the run had not stopped within the wait: `listeners` workers heard the request. */
const Signalled = z.object({ run_id: z.string(), outcome: z.literal("signalled"), listeners: z.number().int().nonnegative() }).strict();

/** What cancelling a run that exists did (POST /v1/runs/:run_id/cancel answers this). */
export const RunCancelled = z.discriminatedUnion("outcome", [AlreadyFinished, Removed, Stopped, Signalled]);
export type RunCancelled = z.infer<typeof RunCancelled>;

export type CancelOutcome = RunCancelled | { readonly run_id: string; readonly outcome: "not_found" };

export interface CancelDeps {
  readonly queue: Queue;
  /** Plain commands (results, markers, the cancel message). */
  readonly redis: RedisClient;
  readonly prefix: string;
  readonly audit: AuditLog;
  readonly waitForStopMs?: number;
}

export async function cancelRun(deps: CancelDeps, runId: string, by: string): Promise<CancelOutcome> {
  const { queue } = deps;
  const job = await queue.getJob(runId);
  if (!job) return { run_id: runId, outcome: "not_found" };
  const state = await job.getState();
  if (state === "completed" || state === "failed") {
    // Read again: it may have finished between the read above and its state.
    const finished = (await queue.getJob(runId)) ?? job;
    return { run_id: runId, outcome: "already_finished", state, result: await readRunResult(deps.redis, queue, finished) };
  }
  if (WAITING_STATES.has(state)) {
    try {
      await job.remove();
      await deps.audit.emit({ type: "sandcastle_run_failed", run_id: runId, failure_reason: "cancelled", exit_code: null, requested_by: by });
      const sessionId = typeof job.data?.session_id === "string" ? job.data.session_id : null;
      if (sessionId !== null) {
        await deps.redis.call(
          ...markerCommand(sessionLogKey(deps.prefix, sessionId), {
            event: "ended",
            run_id: runId,
            status: "killed",
            failure_reason: "cancelled",
            skip_reason: null,
          }),
        );
      }
      return { run_id: runId, outcome: "removed", state };
    } catch {
      // It became active (locked) between getState and remove: stop it where it runs.
    }
  }
  const heard = await publishCancel(deps.redis, deps.prefix, runId, by);
  const deadline = Date.now() + (deps.waitForStopMs ?? DEFAULT_WAIT_FOR_STOP_MS);
  while (Date.now() < deadline) {
    const s = await queue.getJobState(runId);
    const done = s === "completed" || s === "failed" ? await queue.getJob(runId) : undefined;
    if (done && (s === "completed" || s === "failed"))
      return { run_id: runId, outcome: "stopped", state: s, result: await readRunResult(deps.redis, queue, done) };
    await new Promise((r) => setTimeout(r, 100));
  }
  return { run_id: runId, outcome: "signalled", listeners: heard };
}
