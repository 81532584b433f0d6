// Every HTTP route, as data: method, path, who may call it, its parameters, body and answers by status. The
// API router registers its routes from this table (api.ts), wrong methods are answered 405 from it, and the
// OpenAPI document is generated from it (openapi.ts), so a route cannot exist undocumented. Schemas are named
// components (below), each a zod schema the handlers use.
import { z } from "zod";
import { KillSwitchRequest, MargotIntentResult, MargotResearchCompletion, RunCancelled, StatusReport } from "../../queues/index.js";
import { KillSwitchState } from "../control/kill-switch.js";
import { RunProgress, SandcastleRunRequest, SandcastleRunResult, SessionId } from "../sandcastle/contract.js";
import { RunId } from "../sandcastle/retention/retained-runs.js";
import { RunMarker } from "../session-log/session-log.js";
import { Health, IntentEnqueued, JobView, OtherJobView, QueueName, Readiness, RunEnqueued, RunJobView, RunSkippedAtEnqueue } from "./answers.js";
import { Problem, type ProblemCode } from "./problem.js";

export const API_PATH = "/v1";

/** The data of the SSE `end` event. */
export const SessionLogEnd = z.object({ runs: z.array(z.string()).meta({ description: "The runs that ended" }) }).strict();

/** Named schemas: requests as they may be sent, answers as they come back. */
export const REQUEST_COMPONENTS = { SandcastleRunRequest, MargotResearchCompletion, KillSwitchRequest } as const;
export const ANSWER_COMPONENTS = {
  Problem,
  RunEnqueued,
  RunSkippedAtEnqueue,
  IntentEnqueued,
  JobView,
  RunJobView,
  OtherJobView,
  SandcastleRunResult,
  RunProgress,
  MargotIntentResult,
  RunCancelled,
  KillSwitchState,
  StatusReport,
  Health,
  Readiness,
  RunMarker,
  SessionLogEnd,
} as const;
export type ComponentName = keyof typeof REQUEST_COMPONENTS | keyof typeof ANSWER_COMPONENTS;

/** Response headers the service sends (components.headers of the OpenAPI document). */
export const HEADERS = {
  Location: "The new job's URL (relative to this server)",
  "Idempotent-Replayed": 'Sent as "true" when this is the recorded answer to an earlier request with the same Idempotency-Key',
  "WWW-Authenticate": "The scheme to authenticate with: Bearer (a token; basic auth with the token as password also works)",
  "Retry-After": "Seconds to wait before trying again",
} as const;
export type HeaderName = keyof typeof HEADERS;

export type Access = "anyone" | "viewer" | "admin" | "telegram";

export interface Parameter {
  readonly name: string;
  readonly in: "path" | "query" | "header";
  readonly description: string;
  readonly schema: z.ZodType;
  readonly required?: boolean;
}

export interface Answer {
  readonly description: string;
  /** application/json of a named schema. */
  readonly json?: ComponentName;
  /** application/problem+json: the problem codes this answer can carry. */
  readonly problems?: readonly ProblemCode[];
  /** Other media types (HTML, Prometheus text, Server-Sent Events). */
  readonly content?: Readonly<
    Record<
      string,
      { readonly description?: string; readonly schema?: Record<string, unknown>; readonly events?: Readonly<Record<string, ComponentName | "line">> }
    >
  >;
  readonly headers?: readonly HeaderName[];
}

export interface Operation {
  readonly operationId: string;
  readonly method: "get" | "post";
  /** Express syntax (`/v1/jobs/:queue/:id`). */
  readonly path: string;
  readonly summary: string;
  readonly description?: string;
  readonly access: Access;
  readonly parameters?: readonly Parameter[];
  readonly body?: { readonly json: ComponentName } | { readonly form: Record<string, unknown> } | { readonly telegramUpdate: true };
  readonly answers: Readonly<Record<number, Answer>>;
}

const idempotencyKey: Parameter = {
  name: "Idempotency-Key",
  in: "header",
  description:
    "1-200 visible ASCII characters, kept 24 h: a repeat with the same body gets the first answer (same status, `Idempotent-Replayed: true`) and enqueues nothing",
  schema: z.string().regex(/^[\x21-\x7e]{1,200}$/),
};
const bodyProblems: ProblemCode[] = ["invalid_request", "invalid_json"];
const idempotencyAnswers: Record<number, Answer> = {
  409: { description: "A request with this Idempotency-Key is still being handled; retry shortly", problems: ["idempotency_key_in_progress"] },
  413: { description: "The body is over 256 KiB", problems: ["body_too_large"] },
  415: { description: "The body is not sent as application/json", problems: ["unsupported_media_type"] },
  422: { description: "This Idempotency-Key was used with another body", problems: ["idempotency_key_reused"] },
};

/** The API under /v1 (api.ts registers these). */
export const API_OPERATIONS = [
  {
    operationId: "enqueueSandcastleRun",
    method: "post",
    path: `${API_PATH}/sandcastle-runs`,
    summary: "Enqueue a Sandcastle run",
    access: "admin",
    parameters: [idempotencyKey],
    body: { json: "SandcastleRunRequest" },
    answers: {
      201: { description: "Enqueued: the run's job and links to follow it", json: "RunEnqueued", headers: ["Location", "Idempotent-Replayed"] },
      200: {
        description: 'on_capacity "skip" found every run slot taken: nothing was enqueued, here is the skipped result',
        json: "RunSkippedAtEnqueue",
        headers: ["Idempotent-Replayed"],
      },
      400: { description: "The request is refused, each field at fault named in `problems`; nothing was enqueued", problems: bodyProblems },
      ...idempotencyAnswers,
    },
  },
  {
    operationId: "enqueueMargotIntent",
    method: "post",
    path: `${API_PATH}/margot-intents`,
    summary: "Enqueue a completed Margot research run",
    access: "admin",
    parameters: [idempotencyKey],
    body: { json: "MargotResearchCompletion" },
    answers: {
      201: { description: "Enqueued", json: "IntentEnqueued", headers: ["Location", "Idempotent-Replayed"] },
      200: {
        description: "That interaction's job already exists (`duplicate: true`): nothing new was enqueued",
        json: "IntentEnqueued",
        headers: ["Idempotent-Replayed"],
      },
      400: { description: "The completion is refused, each field at fault named", problems: bodyProblems },
      ...idempotencyAnswers,
    },
  },
  {
    operationId: "getJob",
    method: "get",
    path: `${API_PATH}/jobs/:queue/:id`,
    summary: "A job: its state, a run's phase, progress, result and failure",
    description:
      "A run's SandcastleRunResult is here once its session log has announced its end (run-ended): a run that did not end ok is a failed job whose result is still given.",
    access: "viewer",
    parameters: [
      { name: "queue", in: "path", description: "The queue", schema: QueueName },
      { name: "id", in: "path", description: "The job id (a run's: its run id)", schema: z.string().min(1) },
    ],
    answers: {
      200: { description: "The job", json: "JobView" },
      404: {
        description: "No such queue, or no such job (never added, cancelled while waiting, or removed after its retention)",
        problems: ["unknown_queue", "unknown_job"],
      },
    },
  },
  {
    operationId: "cancelRun",
    method: "post",
    path: `${API_PATH}/runs/:run_id/cancel`,
    summary: "Cancel a run wherever it runs, or drop it if it still waits",
    access: "admin",
    parameters: [{ name: "run_id", in: "path", description: "The run id (run-<uuid>)", schema: RunId }],
    answers: {
      200: { description: "What the cancel did", json: "RunCancelled" },
      404: { description: "No such run", problems: ["unknown_run"] },
    },
  },
  {
    operationId: "setKillSwitch",
    method: "post",
    path: `${API_PATH}/killswitch`,
    summary: "Turn the kill switch on or off",
    access: "admin",
    body: { json: "KillSwitchRequest" },
    answers: {
      200: { description: "The kill switch's state now", json: "KillSwitchState" },
      400: { description: "The body is refused", problems: bodyProblems },
      413: idempotencyAnswers[413]!,
      415: idempotencyAnswers[415]!,
    },
  },
  {
    operationId: "getStatus",
    method: "get",
    path: `${API_PATH}/status`,
    summary: "Per-queue counts, active runs, the kill switch, Redis (what `status --json` prints)",
    access: "viewer",
    answers: { 200: { description: "The status report", json: "StatusReport" } },
  },
  {
    operationId: "getSchemas",
    method: "get",
    path: `${API_PATH}/schemas`,
    summary: "The JSON Schema (draft 2020-12) of every request and result, each standalone",
    access: "viewer",
    answers: {
      200: { description: "Schemas by name", content: { "application/json": { schema: { type: "object", additionalProperties: { type: "object" } } } } },
    },
  },
  {
    operationId: "getOpenApi",
    method: "get",
    path: `${API_PATH}/openapi.json`,
    summary: "This document",
    access: "viewer",
    answers: { 200: { description: "The OpenAPI 3.1 document", content: { "application/json": { schema: { type: "object" } } } } },
  },
  {
    operationId: "followSessionLog",
    method: "get",
    path: `${API_PATH}/sessions/:id/logs`,
    summary: "A session's log, live, as Server-Sent Events",
    description:
      "The stored lines first, then each new line as a run writes it. A run's end (`run-ended`) is sent once its result can be read at GET /v1/jobs/sandcastle-run/{run_id}. When the runs seen have ended (with `run_id`: when that run has) the last event is `end` and the server closes; reconnecting after it gets 204. Each event has an `id` (`<stream entry id>/<line>`) to resume after with Last-Event-ID. The stream opens with `retry:` and sends a keep-alive comment every 15 s.",
    access: "viewer",
    parameters: [
      { name: "id", in: "path", description: "The session id", schema: SessionId },
      { name: "run_id", in: "query", description: "Follow this run of the session: the stream ends when it ends", schema: RunId, required: false },
      {
        name: "last_event_id",
        in: "query",
        description: "Resume after this event (as Last-Event-ID)",
        schema: z.string().regex(/^\d{1,20}-\d{1,20}\/\d{1,9}$/),
        required: false,
      },
      {
        name: "Last-Event-ID",
        in: "header",
        description: "Resume after this event (what an EventSource sends when it reconnects)",
        schema: z.string(),
        required: false,
      },
    ],
    answers: {
      200: {
        description: "The stream",
        content: {
          "text/event-stream": {
            description:
              "Events: unnamed (`message`) = one log line (data: the line); `run-queued`, `run-started`, `run-ended` (data: RunMarker JSON); `end` (data: SessionLogEnd JSON)",
            schema: { type: "string" },
            events: { message: "line", "run-queued": "RunMarker", "run-started": "RunMarker", "run-ended": "RunMarker", end: "SessionLogEnd" },
          },
        },
      },
      204: { description: "Resumed after the end: nothing more will come (an EventSource stops reconnecting)" },
      400: { description: "A malformed session id, run_id (also one given twice) or Last-Event-ID", problems: ["invalid_request"] },
      404: { description: "No log for this session, or run_id is no run of this session", problems: ["unknown_session", "unknown_run"] },
      503: {
        description: "SCQ_SSE_MAX_CLIENTS readers already, or Redis failed",
        problems: ["too_many_log_readers", "redis_unavailable", "unavailable"],
        headers: ["Retry-After"],
      },
    },
  },
] as const satisfies readonly Operation[];

/** Routes outside /v1 (server.ts, login.ts, telegram-webhook.ts serve them). */
export const SERVICE_OPERATIONS = [
  {
    operationId: "health",
    method: "get",
    path: "/healthz",
    summary: "Liveness: the process answers",
    access: "anyone",
    answers: { 200: { description: "Alive", json: "Health" } },
  },
  {
    operationId: "readiness",
    method: "get",
    path: "/readyz",
    summary: "Readiness: Redis answers",
    access: "viewer",
    answers: { 200: { description: "Ready", json: "Readiness" }, 503: { description: "Redis does not answer", json: "Readiness" } },
  },
  {
    operationId: "metrics",
    method: "get",
    path: "/metrics",
    summary: "Prometheus metrics",
    access: "viewer",
    answers: { 200: { description: "Prometheus text exposition format 0.0.4", content: { "text/plain": { schema: { type: "string" } } } } },
  },
  {
    operationId: "loginForm",
    method: "get",
    path: "/login",
    summary: "The login page (a browser's way in)",
    access: "anyone",
    parameters: [{ name: "next", in: "query", description: "A path of this site to go to after logging in", schema: z.string(), required: false }],
    answers: { 200: { description: "The form", content: { "text/html": { schema: { type: "string" } } } } },
  },
  {
    operationId: "login",
    method: "post",
    path: "/login",
    summary: "Log in: a token becomes an HttpOnly SameSite=Strict session cookie (12 h)",
    access: "anyone",
    body: { form: { type: "object", properties: { token: { type: "string" }, next: { type: "string" } }, required: ["token"] } },
    answers: {
      303: { description: "Logged in: the cookie is set, on to `next`" },
      401: { description: "Not a token of this server: the form again", content: { "text/html": { schema: { type: "string" } } } },
    },
  },
  {
    operationId: "logout",
    method: "post",
    path: "/logout",
    summary: "End the browser session",
    access: "anyone",
    answers: { 303: { description: "Logged out: on to the login page" } },
  },
  {
    operationId: "board",
    method: "get",
    path: "/admin/queues",
    summary: "Bull Board (HTML; read-only for viewers). Its own API lives under this path",
    access: "viewer",
    answers: { 200: { description: "The board", content: { "text/html": { schema: { type: "string" } } } } },
  },
  {
    operationId: "telegramWebhook",
    method: "post",
    path: "/telegram/webhook",
    summary: "Telegram's updates (reactions to drafts); only with TELEGRAM_WEBHOOK_SECRET",
    access: "telegram",
    body: { telegramUpdate: true },
    answers: {
      200: {
        description: "Recorded, ignored or a duplicate",
        content: { "application/json": { schema: { type: "object", properties: { ok: { const: true } }, required: ["ok"] } } },
      },
      401: { description: "No or a wrong X-Telegram-Bot-Api-Secret-Token", content: { "application/json": { schema: { type: "object" } } } },
      413: { description: "Over 64 KB", content: { "application/json": { schema: { type: "object" } } } },
      503: {
        description: "Not recorded (Telegram retries): no REVIEW_CHAT_ID, or Redis failed",
        content: { "application/json": { schema: { type: "object" } } },
      },
    },
  },
] as const satisfies readonly Operation[];

export const OPERATIONS: readonly Operation[] = [...API_OPERATIONS, ...SERVICE_OPERATIONS];
export type ApiOperationId = (typeof API_OPERATIONS)[number]["operationId"];

/** The methods a path takes, as an Allow header says them: HEAD with GET, and OPTIONS (answered for every path). */
export function allowedMethods(path: string, operations: readonly Operation[] = OPERATIONS): string[] {
  const methods = new Set(operations.filter((o) => o.path === path).map((o) => o.method.toUpperCase()));
  if (methods.has("GET")) methods.add("HEAD");
  methods.add("OPTIONS");
  return [...methods].sort();
}
