// `cancel RUN_ID`: drop a run still waiting, or stop a running one wherever it runs (terminate → 5 s → kill).
import { AuditLog } from "../../audit/audit-log.js";
import { AppError } from "../../errors.js";
import { createRedactor } from "../../redact/index.js";
import { publishCancel } from "../../sandcastle/run-control.js";
import { requester } from "../requester.js";
import type { Runtime } from "../runtime.js";

const WAIT_FOR_STOP_MS = 15_000;

export async function cancelCommand(rt: Runtime, runId: string): Promise<number> {
  const queue = rt.queues.sandcastleRun;
  const by = requester();
  const job = await queue.getJob(runId);
  if (!job) throw new AppError("invalid_input", `no run ${runId} in ${queue.name}`);
  const state = await job.getState();
  const print = (o: object) => process.stdout.write(`${JSON.stringify({ run_id: runId, ...o })}\n`);

  if (state === "completed" || state === "failed") {
    print({ outcome: "already_finished", state });
    return 0;
  }
  if (state === "waiting" || state === "delayed" || state === "prioritized" || state === "waiting-children") {
    try {
      await job.remove();
      const audit = new AuditLog(rt.config.AUDIT_LOG_PATH, createRedactor());
      await audit.emit({ type: "sandcastle_run_failed", run_id: runId, failure_reason: "cancelled", exit_code: null, requested_by: by });
      await audit.close();
      print({ outcome: "removed", state });
      return 0;
    } catch {
      // It became active (locked) between getState and remove: stop it where it runs.
    }
  }
  const heard = await publishCancel(rt.redis, rt.config.SCQ_KEY_PREFIX, runId, by);
  const deadline = Date.now() + WAIT_FOR_STOP_MS;
  while (Date.now() < deadline) {
    const s = await job.getState();
    if (s === "completed" || s === "failed") {
      const done = await queue.getJob(runId);
      print({ outcome: "stopped", state: s, result: done?.returnvalue ?? null });
      return 0;
    }
    await new Promise((r) => setTimeout(r, 100));
  }
  print({ outcome: "signalled", listeners: heard });
  return heard > 0 ? 0 : 1;
}
