// One pino logger for the process; children carry queue, job id and session id.
// Every string of every line goes through the secret-shape redactor first: defence in depth,
// since what we log should never hold a secret in the first place.
import { pino, type Logger } from "pino";
import { createRedactor } from "./redact/index.js";

export type { Logger };

const redactor = createRedactor();

function redactDeep(value: unknown, depth = 0): unknown {
  if (typeof value === "string") return redactor.line(value);
  if (depth > 6 || value === null || typeof value !== "object") return value;
  if (Array.isArray(value)) return value.map((v) => redactDeep(v, depth + 1));
  if (value instanceof Error) return { type: value.name, message: redactor.text(value.message) };
  return Object.fromEntries(Object.entries(value).map(([k, v]) => [k, redactDeep(v, depth + 1)]));
}

/** Logs go to stderr so that CLI results on stdout stay machine-readable. */
export function createLogger(level: string, name = "sandcastle-queue"): Logger {
  return pino(
    {
      name,
      level,
      base: { pid: process.pid },
      formatters: { log: (obj) => redactDeep(obj) as Record<string, unknown> },
      hooks: {
        logMethod(args, method) {
          method.apply(this, args.map((a) => (typeof a === "string" ? redactor.line(a) : a)) as Parameters<typeof method>);
        },
      },
    },
    pino.destination({ fd: 2, sync: true }),
  );
}

export function jobLogger(parent: Logger, fields: { queue: string; jobId?: string | undefined; sessionId?: string | undefined }): Logger {
  const bindings: Record<string, string> = { queue: fields.queue };
  if (fields.jobId !== undefined) bindings.job_id = fields.jobId;
  if (fields.sessionId !== undefined) bindings.session_id = fields.sessionId;
  return parent.child(bindings);
}
