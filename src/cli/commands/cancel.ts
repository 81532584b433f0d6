// `cancel RUN_ID`: drop a run still waiting, or stop a running one wherever it runs (queues/run-cancel.ts).
import { cancelRun } from "../../../queues/index.js";
import { AuditLog } from "../../audit/audit-log.js";
import { AppError } from "../../errors.js";
import { createRedactor } from "../../redact/index.js";
import { requester } from "../requester.js";
import type { Runtime } from "../runtime.js";

export async function cancelCommand(rt: Runtime, runId: string): Promise<number> {
  const audit = new AuditLog(rt.config.AUDIT_LOG_PATH, createRedactor());
  rt.shutdown.add("audit log", () => audit.close());
  const outcome = await cancelRun({ queue: rt.queues.sandcastleRun, redis: rt.redis, prefix: rt.config.SCQ_KEY_PREFIX, audit }, runId, requester());
  if (outcome.outcome === "not_found") throw new AppError("invalid_input", `no run ${runId} in ${rt.queues.sandcastleRun.name}`);
  process.stdout.write(`${JSON.stringify(outcome)}\n`);
  return outcome.outcome === "signalled" && outcome.listeners === 0 ? 1 : 0;
}
