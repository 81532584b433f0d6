// Every error the HTTP side answers is an RFC 9457 problem: `application/problem+json` with `type`, `title`,
// `status`, `detail`, plus the fields clients had before problems (`error`, the code; `message`, the same
// text as `detail`; `problems`, the fields at fault). One catalogue of codes: handlers, the OpenAPI document
// and the docs all read it.
import type { Response } from "express";
import { z } from "zod";

export const PROBLEM_CONTENT_TYPE = "application/problem+json";

/** Each problem type: its status and a title that stays the same for every occurrence (RFC 9457 §3.1.3). */
export const PROBLEM_TYPES = {
  invalid_request: { status: 400, title: "The request is not one this endpoint takes" },
  invalid_json: { status: 400, title: "The body is not valid JSON" },
  unauthorized: { status: 401, title: "A token is needed" },
  forbidden: { status: 403, title: "This token may not do that" },
  cross_site_write: { status: 403, title: "Writes from another origin are refused" },
  not_found: { status: 404, title: "No such endpoint" },
  unknown_queue: { status: 404, title: "No such queue" },
  unknown_job: { status: 404, title: "No such job" },
  unknown_run: { status: 404, title: "No such run" },
  unknown_session: { status: 404, title: "No such session log" },
  method_not_allowed: { status: 405, title: "This endpoint does not take that method" },
  idempotency_key_in_progress: { status: 409, title: "A request with this Idempotency-Key is still being handled" },
  body_too_large: { status: 413, title: "The body is too large" },
  unsupported_media_type: { status: 415, title: "The body must be JSON" },
  host_not_allowed: { status: 421, title: "This Host is not served" },
  idempotency_key_reused: { status: 422, title: "This Idempotency-Key was used with another body" },
  internal_error: { status: 500, title: "The request could not be handled" },
  redis_unavailable: { status: 503, title: "Redis cannot be reached" },
  too_many_log_readers: { status: 503, title: "Too many live log readers" },
  unavailable: { status: 503, title: "The service cannot answer now" },
} as const satisfies Record<string, { status: number; title: string }>;

export type ProblemCode = keyof typeof PROBLEM_TYPES;
export const PROBLEM_CODES = Object.keys(PROBLEM_TYPES) as [ProblemCode, ...ProblemCode[]];

/**
 * A problem type's URI. RFC 9457 §3.1.1 suggests a tag URI (RFC 4151) for types that are not meant to be
 * dereferenced; the code is also the `error` field, so a client switches on either.
 */
export function problemType(code: ProblemCode): string {
  return `tag:sandcastle-queue,2026:problem:${code}`;
}

export const FieldProblemSchema = z
  .object({
    field: z.string().meta({ description: 'The field at fault, as a dotted path (`extra_env.GH_PAT`); "(top level)" for the whole body' }),
    problem: z.string().meta({ description: "What the field takes, in words" }),
  })
  .strict();

export const Problem = z
  .object({
    type: z.string().meta({ description: "The problem type: tag:sandcastle-queue,2026:problem:<error>" }),
    title: z.string().meta({ description: "The problem type's title, the same for every occurrence" }),
    status: z.number().int().min(400).max(599),
    detail: z.string().meta({ description: "This occurrence, in words" }),
    error: z.enum(PROBLEM_CODES).meta({ description: "The problem's code (kept from before RFC 9457: the same as type's last part)" }),
    message: z.string().meta({ description: "The same text as detail (kept for clients written before RFC 9457)" }),
    problems: z.array(FieldProblemSchema).optional().meta({ description: "Every field at fault (400 invalid_request, invalid_json)" }),
  })
  .strict()
  .meta({ description: "An RFC 9457 problem (application/problem+json)" });
export type Problem = z.infer<typeof Problem>;

export function problemBody(code: ProblemCode, detail: string, problems?: ReadonlyArray<{ field: string; problem: string }>): Problem {
  const t = PROBLEM_TYPES[code];
  return { type: problemType(code), title: t.title, status: t.status, detail, error: code, message: detail, ...(problems ? { problems: [...problems] } : {}) };
}

/** Answers the problem; its status is the type's. */
export function sendProblem(res: Response, code: ProblemCode, detail: string, problems?: ReadonlyArray<{ field: string; problem: string }>): void {
  const body = problemBody(code, detail, problems);
  res.status(body.status).type(PROBLEM_CONTENT_TYPE).json(body);
}
