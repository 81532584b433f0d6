// The HTTP API for producers in other languages (Pi-CEO's poller and dashboard) under /v1: the same
// zod schemas and producer functions as the CLI, answers in JSON. Writes need the admin token.
//   POST /v1/sandcastle-runs      201 {job_id}  (200 with the result when skipped at once: nothing enqueued)
//   POST /v1/margot-intents       201 {job_id}  (200 when that interaction's job already exists)
//   GET  /v1/jobs/:queue/:id      state, phase, progress, result, failure
//   POST /v1/runs/:run_id/cancel  the cancel outcome
//   POST /v1/killswitch           {"active": true|false} → the kill switch state
//   GET  /v1/status | /v1/schemas | /v1/sessions/:id/logs (Server-Sent Events)
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
import { InvalidInputError, type FieldProblem } from "../errors.js";
import { issueList } from "../invalid-input.js";
import type { Logger } from "../log.js";
import { isRedisUnavailable, REDIS_UNAVAILABLE_MESSAGE } from "../redis/unavailable.js";
import { MargotResearchCompletion } from "../margot/contract.js";
import type { SandcastleRunResult } from "../sandcastle/contract.js";
import type { RunSlots } from "../sandcastle/run-slots.js";
import { authOf, requireAdmin } from "./auth.js";
import { claimIdempotencyKey, validIdempotencyKey } from "./idempotency.js";

export const API_PATH = "/v1";
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
  /** A run answered `skipped` at enqueue (no job): metrics count it here, no event stream will. */
  readonly onSkippedAtEnqueue?: (result: SandcastleRunResult) => void;
  readonly log: Logger;
}

type Answer = { status: number; body: unknown };

const problem = (res: Response, status: number, error: string, message: string, problems?: readonly FieldProblem[]) => {
  res.status(status).json({ error, message, ...(problems ? { problems } : {}) });
};

/** JSON bodies only, bounded; the body errors of express.json become our answers. */
function jsonBody(): RequestHandler[] {
  return [
    (req, res, next) => {
      if (!req.is("application/json")) return problem(res, 415, "unsupported_media_type", "send the body as JSON with Content-Type: application/json");
      next();
    },
    express.json({ limit: API_BODY_LIMIT_BYTES, strict: false, type: () => true }),
  ];
}

function by(req: Request, res: Response): string {
  return `api:${authOf(res).role}@${req.socket.remoteAddress ?? "?"}`;
}

export function apiRouter(deps: ApiDeps): Router {
  const router = express.Router();
  const { queues } = deps;

  /** Runs `enqueue` once per Idempotency-Key; a repeat gets the first answer with 200. */
  const idempotent = async (req: Request, res: Response, scope: string, enqueue: () => Promise<Answer>) => {
    const key = req.get("idempotency-key");
    if (key === undefined) {
      const a = await enqueue();
      res.status(a.status).json(a.body);
      return;
    }
    if (!validIdempotencyKey(key)) return problem(res, 400, "invalid_request", "Idempotency-Key takes 1-200 visible ASCII characters");
    const claim = await claimIdempotencyKey(deps.redis, deps.prefix, scope, key, req.body);
    if (claim.kind === "conflict") return problem(res, 422, "idempotency_key_reused", "this Idempotency-Key was used with another body");
    if (claim.kind === "in_progress") return problem(res, 409, "idempotency_key_in_progress", "a request with this Idempotency-Key is still being handled; retry shortly");
    if (claim.kind === "repeat") {
      res.status(200).json(claim.answer);
      return;
    }
    try {
      const a = await enqueue();
      await claim.record(a.body);
      res.status(a.status).json(a.body);
    } catch (err) {
      await claim.release().catch(() => {});
      throw err;
    }
  };

  router.post("/sandcastle-runs", requireAdmin, ...jsonBody(), async (req, res) => {
    await idempotent(req, res, SANDCASTLE_RUN_QUEUE, async () => {
      const outcome = await enqueueRun(queues.sandcastleRun, req.body, { ...deps.runPaths, slots: deps.slots, audit: deps.audit, redis: deps.redis });
      if (outcome.skipped !== null) {
        deps.onSkippedAtEnqueue?.(outcome.skipped);
        return { status: 200, body: { queue: SANDCASTLE_RUN_QUEUE, job_id: null, result: outcome.skipped } };
      }
      const id = outcome.runId;
      const sid = outcome.request.session_id;
      return {
        status: 201,
        body: { queue: SANDCASTLE_RUN_QUEUE, job_id: id, run_id: id, session_id: sid, links: { job: `${API_PATH}/jobs/${SANDCASTLE_RUN_QUEUE}/${id}`, logs: `${API_PATH}/sessions/${sid}/logs?run_id=${id}`, cancel: `${API_PATH}/runs/${id}/cancel` } },
      };
    });
  });

  router.post("/margot-intents", requireAdmin, ...jsonBody(), async (req, res) => {
    await idempotent(req, res, MARGOT_INTENT_QUEUE, async () => {
      const parsed = MargotResearchCompletion.safeParse(req.body);
      // The job id is the interaction's: the same interaction is one job while it is kept.
      const existed = parsed.success && (await queues.margotIntent.getJob(researchJobId(parsed.data.interaction_id))) !== undefined;
      const { jobId } = await enqueueResearchCompletion(queues.margotIntent, req.body);
      return { status: existed ? 200 : 201, body: { queue: MARGOT_INTENT_QUEUE, job_id: jobId, duplicate: existed, links: { job: `${API_PATH}/jobs/${MARGOT_INTENT_QUEUE}/${jobId}` } } };
    });
  });

  router.get("/jobs/:queue/:id", async (req, res) => {
    const name = String(req.params.queue);
    const queue = queues.all.find((q) => q.name === name);
    if (!queue) return problem(res, 404, "unknown_queue", `no queue "${name}": takes ${QUEUE_NAMES.join(", ")}`);
    const id = String(req.params.id);
    // The state first: a job read after its state is final holds its outcome.
    const state = await queue.getJobState(id);
    const job = state === "unknown" ? undefined : await queue.getJob(id);
    if (!job) return problem(res, 404, "unknown_job", `no job ${id} in ${name} (never added, cancelled, or removed after its retention)`);
    const isRun = queue === queues.sandcastleRun;
    const result = isRun ? await readRunResult(deps.redis, queue, job) : state === "completed" ? (job.returnvalue ?? null) : null;
    res.json({
      queue: name,
      id: String(job.id),
      name: job.name,
      state,
      ...(isRun ? { phase: state === "completed" || state === "failed" ? "done" : runPhase(job.progress) } : {}),
      progress: job.progress ?? null,
      result,
      failure: state === "failed" ? { reason: job.failedReason ?? null } : null,
      attempts_made: job.attemptsMade,
      created_at: new Date(job.timestamp).toISOString(),
      started_at: job.processedOn ? new Date(job.processedOn).toISOString() : null,
      finished_at: job.finishedOn ? new Date(job.finishedOn).toISOString() : null,
    });
  });

  router.post("/runs/:run_id/cancel", requireAdmin, async (req, res) => {
    const outcome = await cancelRun({ queue: queues.sandcastleRun, redis: deps.redis, prefix: deps.prefix, audit: deps.audit }, String(req.params.run_id), by(req, res));
    if (outcome.outcome === "not_found") return problem(res, 404, "unknown_run", `no run ${req.params.run_id} in ${SANDCASTLE_RUN_QUEUE}`);
    res.json(outcome);
  });

  router.post("/killswitch", requireAdmin, ...jsonBody(), async (req, res) => {
    const parsed = KillSwitchRequest.safeParse(req.body);
    if (!parsed.success) return problem(res, 400, "invalid_request", "invalid kill switch request", issueList(parsed.error));
    await deps.killSwitch.set(parsed.data.active, by(req, res));
    res.json(await deps.killSwitch.state());
  });

  router.get("/status", async (_req, res) => {
    res.json(await collectStatus(queues, deps.killSwitch, deps.redisInfo));
  });

  const schemas = jsonSchemas();
  router.get("/schemas", (_req, res) => {
    res.json(schemas);
  });

  router.get("/sessions/:id/logs", deps.sessionLogs);

  router.use((_req: Request, res: Response) => problem(res, 404, "not_found", `no such endpoint under ${API_PATH}`));

  // Body errors of express.json, bad input from the producers, and anything else, as JSON.
  router.use((err: unknown, _req: Request, res: Response, _next: NextFunction) => {
    if (err instanceof InvalidInputError) return problem(res, 400, "invalid_request", err.message, err.problems);
    const e = err as { status?: number; type?: string; message?: string };
    if (e.type === "entity.too.large") return problem(res, 413, "body_too_large", `the body is over ${API_BODY_LIMIT_BYTES / 1024} KiB`);
    if (e.type === "entity.parse.failed") return problem(res, 400, "invalid_json", "the body is not valid JSON", [{ field: "(top level)", problem: "is not valid JSON" }]);
    if (isRedisUnavailable(err)) return problem(res, 503, "redis_unavailable", REDIS_UNAVAILABLE_MESSAGE);
    deps.log.error({ err: e.message }, "API request failed");
    problem(res, 500, "internal_error", "the request could not be handled; see the server's log");
  });
  return router;
}
