// One pino logger for the process; children carry queue, job id and session id.
import { pino, type Logger } from "pino";

export type { Logger };

/** Logs go to stderr so that CLI results on stdout stay machine-readable. */
export function createLogger(level: string, name = "sandcastle-queue"): Logger {
  return pino({ name, level, base: { pid: process.pid } }, pino.destination({ fd: 2, sync: true }));
}

export function jobLogger(parent: Logger, fields: { queue: string; jobId?: string | undefined; sessionId?: string | undefined }): Logger {
  const bindings: Record<string, string> = { queue: fields.queue };
  if (fields.jobId !== undefined) bindings.job_id = fields.jobId;
  if (fields.sessionId !== undefined) bindings.session_id = fields.sessionId;
  return parent.child(bindings);
}
