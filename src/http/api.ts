// The HTTP API for producers in other languages (Pi-CEO's poller and dashboard) under /v1: the same
// zod schemas and producer functions as the CLI, answers in JSON, errors as RFC 9457 problems. Routes come
// from the operations table (operations.ts: every route, its method and its answers), which the OpenAPI
// document is generated from too; a method a path does not take is 405 with Allow.
//   POST /v1/sandcastle-runs      201 {job_id} + Location  (200 with the result when skipped at once: nothing enqueued)
//   POST /v1/margot-intents       201 {job_id} + Location  (200 when that interaction's job already exists)
//   GET  /v1/jobs/:queue/:id      state, phase, progress, result, failure
//   POST /v1/runs/:run_id/cancel  the cancel outcome
//   POST /v1/killswitch           {"active": true|false} → the kill switch state
//   GET  /v1/status | /v1/schemas | /v1/openapi.json | /v1/sessions/:id/logs (Server-Sent Events)
import express, { type NextFunction, type Request, type RequestHandler, type Response, type Router } from "express";
import type { RedisClient } from "../redis/connect.js";
import {
  cancelRun,
  collectStatus,
  enqueueResearchCompletion,
  enqueueRun,
  type RunRequestPaths,
  jsonSchemas,
  KillSwitchRequest,
  MARGOT_INTENT_QUEUE,
  QUEUE_NAMES,
  readRunResult,
  researchJobId,
  runPhase,
  SANDCASTLE_RUN_QUEUE,
  type Queues,
} from "../../queues/index.js";
import type { AuditLog } from "../audit/audit-log.js";
import type { KillSwitch } from "../control/kill-switch.js";
import { InvalidInputError } from "../errors.js";
import { issueList, parseWithWording, WHOLE_PAYLOAD } from "../invalid-input.js";
import type { Logger } from "../log.js";
import { isRedisUnavailable, REDIS_UNAVAILABLE_MESSAGE } from "../redis/unavailable.js";
import { MargotResearchCompletion } from "../margot/contract.js";
import { RunProgress, type SandcastleRunResult } from "../sandcastle/contract.js";
import type { RunSlots } from "../sandcastle/worker/run-slots.js";
import type { IntentEnqueued, OtherJobView, RunEnqueued, RunJobView, RunSkippedAtEnqueue } from "./answers.js";
import { authOf, requireAdmin } from "./auth.js";
import { claimIdempotencyKey, validIdempotencyKey } from "./idempotency.js";
import { methodNotAllowed } from "./method-not-allowed.js";
import { openApiDocument } from "./openapi.js";
import { API_OPERATIONS, API_PATH, type ApiOperationId } from "./operations.js";
import { sendProblem } from "./problem.js";
import { BodyError, JSON_MAX_DEPTH, jsonBody } from "./json-body.js";

export { API_PATH };
/** Requests are small (a run request's extra_env is at most a few KiB): anything bigger is refused, 413. */
export const API_BODY_LIMIT_BYTES = 256 * 1024;

export interface ApiDeps {
  readonly queues: Queues;
  /** Plain commands only. */
  readonly redis: RedisClient;
  readonly prefix: string;
  /** Where run requests' manifests and providers are found; a request reaching into RUNS_DIR is refused. */
  readonly runPaths: RunRequestPaths;
  readonly slots: RunSlots;
  readonly audit: AuditLog;
  readonly killSwitch: KillSwitch;
  readonly redisInfo: { readonly url: string; readonly embedded: boolean };
  readonly sessionLogs: RequestHandler;
  /** The service's version, for the OpenAPI document. */
  readonly version: string;
  /** A run answered `skipped` at enqueue (no job): metrics count it here, no event stream will. */
  readonly onSkippedAtEnqueue?: (result: SandcastleRunResult) => void;
  readonly log: Logger;
}

/** What an enqueueing POST answers: its status, body and the new job's URL. */
type Answer = { status: number; body: unknown; location?: string };

/** JSON bodies only, bounded in size and depth (json-body.ts); its errors become our answers below. */
function jsonBodies(): RequestHandler[] {
  return [
    (req, res, next) => {
      if (!req.is("application/json")) return sendProblem(res, "unsupported_media_type", "send the body as JSON with Content-Type: application/json");
      next();
    },
    jsonBody(API_BODY_LIMIT_BYTES),
  ];
}

function by(req: Request, res: Response): string {
  return `api:${authOf(res).role}@${req.socket.remoteAddress ?? "?"}`;
}

const jobLink = (queue: string, id: string) => `${API_PATH}/jobs/${queue}/${id}`;

export function apiRouter(deps: ApiDeps): Router {
  const router = express.Router();
  const { queues } = deps;
  const schemas = jsonSchemas();
  const openApi = openApiDocument(deps.version);

  const send = (res: Response, a: Answer, replayed: boolean) => {
    if (a.location !== undefined && a.status === 201) res.location(a.location);
    if (replayed) res.setHeader("Idempotent-Replayed", "true");
    res.status(a.status).json(a.body);
  };

  /** Runs `enqueue` once per Idempotency-Key; a repeat gets the first answer, its status and body, marked replayed. */
  const idempotent = async (req: Request, res: Response, scope: string, enqueue: () => Promise<Answer>) => {
    const key = req.get("idempotency-key");
    if (key === undefined) return send(res, await enqueue(), false);
    if (!validIdempotencyKey(key))
      return sendProblem(res, "invalid_request", "Idempotency-Key takes 1-200 visible ASCII characters", [
        { field: "Idempotency-Key", problem: "takes 1-200 visible ASCII characters" },
      ]);
    const claim = await claimIdempotencyKey(deps.redis, deps.prefix, scope, key, req.body);
    if (claim.kind === "conflict") return sendProblem(res, "idempotency_key_reused", "this Idempotency-Key was used with another body");
    if (claim.kind === "in_progress")
      return sendProblem(res, "idempotency_key_in_progress", "a request with this Idempotency-Key is still being handled; retry shortly");
    if (claim.kind === "repeat") {
      const body = claim.answer as { links?: { job?: unknown } };
      return send(res, { status: claim.status, body: claim.answer, ...(typeof body.links?.job === "string" ? { location: body.links.job } : {}) }, true);
    }
    try {
      const a = await enqueue();
      await claim.record(a.status, a.body);
      send(res, a, false);
    } catch (err) {
      await claim.release().catch(() => {});
      throw err;
    }
  };

  const handlers: Record<ApiOperationId, RequestHandler[]> = {
    enqueueSandcastleRun: [
      requireAdmin,
      ...jsonBodies(),
      async (req, res) => {
        await idempotent(req, res, SANDCASTLE_RUN_QUEUE, async () => {
          const outcome = await enqueueRun(queues.sandcastleRun, req.body, { ...deps.runPaths, slots: deps.slots, audit: deps.audit, redis: deps.redis });
          if (outcome.skipped !== null) {
            deps.onSkippedAtEnqueue?.(outcome.skipped);
            const body: RunSkippedAtEnqueue = { queue: SANDCASTLE_RUN_QUEUE, job_id: null, result: outcome.skipped };
            return { status: 200, body };
          }
          const id = outcome.runId;
          const sid = outcome.request.session_id;
          const body: RunEnqueued = {
            queue: SANDCASTLE_RUN_QUEUE,
            job_id: id,
            run_id: id,
            session_id: sid,
            links: { job: jobLink(SANDCASTLE_RUN_QUEUE, id), logs: `${API_PATH}/sessions/${sid}/logs?run_id=${id}`, cancel: `${API_PATH}/runs/${id}/cancel` },
          };
          return { status: 201, body, location: body.links.job };
        });
      },
    ],

    enqueueMargotIntent: [
      requireAdmin,
      ...jsonBodies(),
      async (req, res) => {
        await idempotent(req, res, MARGOT_INTENT_QUEUE, async () => {
          const parsed = MargotResearchCompletion.safeParse(req.body);
          // The job id is the interaction's: the same interaction is one job while it is kept.
          const existed = parsed.success && (await queues.margotIntent.getJob(researchJobId(parsed.data.interaction_id))) !== undefined;
          const { jobId } = await enqueueResearchCompletion(queues.margotIntent, req.body);
          const body: IntentEnqueued = { queue: MARGOT_INTENT_QUEUE, job_id: jobId, duplicate: existed, links: { job: jobLink(MARGOT_INTENT_QUEUE, jobId) } };
          return { status: existed ? 200 : 201, body, location: body.links.job };
        });
      },
    ],

    getJob: [
      async (req, res) => {
        const name = String(req.params.queue);
        const queue = queues.all.find((q) => q.name === name);
        if (!queue) return sendProblem(res, "unknown_queue", `no queue "${name}": takes ${QUEUE_NAMES.join(", ")}`);
        const id = String(req.params.id);
        // The state first: a job read after its state is final holds its outcome.
        const state = await queue.getJobState(id);
        const job = state === "unknown" ? undefined : await queue.getJob(id);
        if (!job || state === "unknown")
          return sendProblem(res, "unknown_job", `no job ${id} in ${name} (never added, cancelled, or removed after its retention)`);
        const common = {
          id: String(job.id),
          name: job.name,
          state,
          failure: state === "failed" ? { reason: job.failedReason ?? null } : null,
          attempts_made: job.attemptsMade,
          created_at: new Date(job.timestamp).toISOString(),
          started_at: job.processedOn ? new Date(job.processedOn).toISOString() : null,
          finished_at: job.finishedOn ? new Date(job.finishedOn).toISOString() : null,
        };
        if (queue === queues.sandcastleRun) {
          const progress = RunProgress.safeParse(job.progress);
          const view: RunJobView = {
            queue: SANDCASTLE_RUN_QUEUE,
            ...common,
            phase: state === "completed" || state === "failed" ? "done" : runPhase(job.progress),
            progress: progress.success ? progress.data : null,
            result: await readRunResult(deps.redis, queue, job),
          };
          return void res.json(view);
        }
        const view: OtherJobView = {
          queue: name as OtherJobView["queue"],
          ...common,
          progress: job.progress ?? null,
          result: state === "completed" ? (job.returnvalue ?? null) : null,
        };
        res.json(view);
      },
    ],

    cancelRun: [
      requireAdmin,
      async (req, res) => {
        const outcome = await cancelRun(
          { queue: queues.sandcastleRun, redis: deps.redis, prefix: deps.prefix, audit: deps.audit },
          String(req.params.run_id),
          by(req, res),
        );
        if (outcome.outcome === "not_found") return sendProblem(res, "unknown_run", `no run ${req.params.run_id} in ${SANDCASTLE_RUN_QUEUE}`);
        res.json(outcome);
      },
    ],

    setKillSwitch: [
      requireAdmin,
      ...jsonBodies(),
      async (req, res) => {
        const parsed = parseWithWording(KillSwitchRequest, req.body);
        if (!parsed.success) return sendProblem(res, "invalid_request", "invalid kill switch request", issueList(parsed.error));
        await deps.killSwitch.set(parsed.data.active, by(req, res));
        res.json(await deps.killSwitch.state());
      },
    ],

    getStatus: [
      async (_req, res) => {
        res.json(await collectStatus(queues, deps.killSwitch, deps.redisInfo));
      },
    ],

    getSchemas: [(_req, res) => void res.json(schemas)],
    getOpenApi: [(_req, res) => void res.json(openApi)],
    followSessionLog: [deps.sessionLogs],
  };
  for (const op of API_OPERATIONS) router[op.method](op.path.slice(API_PATH.length), ...handlers[op.operationId]);
  router.use(methodNotAllowed(API_OPERATIONS, API_PATH));
  router.use((_req: Request, res: Response) => sendProblem(res, "not_found", `no such endpoint under ${API_PATH}; GET ${API_PATH}/openapi.json lists them`));

  // Body errors (json-body.ts), bad input from the producers, and anything else, as problems.
  router.use((err: unknown, _req: Request, res: Response, _next: NextFunction) => {
    if (err instanceof InvalidInputError) return sendProblem(res, "invalid_request", err.message, err.problems);
    if (err instanceof BodyError) {
      if (err.problem === "too_large") return sendProblem(res, "body_too_large", `the body is over ${API_BODY_LIMIT_BYTES / 1024} KiB`);
      if (err.problem === "encoded") return sendProblem(res, "unsupported_media_type", "send the body unencoded (no Content-Encoding)");
      if (err.problem === "too_deep") {
        const nested = `is nested deeper than ${JSON_MAX_DEPTH} levels`;
        return sendProblem(res, "invalid_request", `${err.field} ${nested}`, [{ field: err.field, problem: nested }]);
      }
      return sendProblem(res, "invalid_json", "the body is not valid JSON", [{ field: WHOLE_PAYLOAD, problem: "is not valid JSON" }]);
    }
    const e = err as { message?: string };
    if (isRedisUnavailable(err)) return sendProblem(res, "redis_unavailable", REDIS_UNAVAILABLE_MESSAGE);
    deps.log.error({ err: e.message }, "API request failed");
    sendProblem(res, "internal_error", "the request could not be handled; see the server's log");
  });
  return router;
}
