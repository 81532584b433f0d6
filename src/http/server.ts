// The HTTP face: Bull Board at /admin/queues, the API under /v1, /metrics, /login, /healthz, /readyz.
// Every request first passes the Host check (DNS rebinding); everything but /healthz, /login and public
// routes (the Telegram webhook, with its own secret) needs a token or a session (auth.ts).
import { once } from "node:events";
import { createServer, type Server } from "node:http";
import { createRequire } from "node:module";
import { createBullBoard } from "@bull-board/api";
import { BullMQAdapter } from "@bull-board/api/bullMQAdapter";
import { ExpressAdapter } from "@bull-board/express";
import express, { type Express, type Request, type Response, type Router } from "express";
import type { RedisClient } from "../redis/connect.js";
import type { Queues, RunRequestPaths } from "../../queues/index.js";
import type { AuditLog } from "../audit/audit-log.js";
import type { KillSwitch } from "../control/kill-switch.js";
import { AppError } from "../errors.js";
import type { Logger } from "../log.js";
import { describeTarget, type RedisTarget } from "../redis/target.js";
import type { RunSlots } from "../sandcastle/worker/run-slots.js";
import { accessLog, type AccessLogLevel } from "./access-log.js";
import { API_PATH, apiRouter } from "./api.js";
import { authenticate, authOf, requireAdmin, sameOriginWrites, SessionStore, type Tokens } from "./auth.js";
import { boardPagePolicy } from "./board-page.js";
import { checkHost, isLoopback } from "./host-check.js";
import { LOGIN_PATH, loginRouter } from "./login.js";
import { methodNotAllowed } from "./method-not-allowed.js";
import { METRICS_PATH, ServiceMetrics } from "./metrics.js";
import { SERVICE_OPERATIONS } from "./operations.js";
import { sendProblem } from "./problem.js";
import { sessionEventsHandler } from "./session-events.js";

export { isLoopback };
export const BOARD_PATH = "/admin/queues";
/** A request's headers come in one packet or a few: 10 s is plenty, and bounds a slow-headers connection. */
const HEADERS_TIMEOUT_MS = 10_000;
/** How often the server looks for requests past their time. */
const CONNECTIONS_CHECK_MS = 1000;

export interface HttpDeps {
  readonly host: string;
  readonly port: number;
  readonly tokens: Tokens;
  /** Host names served besides loopback ones (SCQ_ALLOWED_HOSTS). */
  readonly allowedHosts: readonly string[] | "*";
  readonly boardReadOnly: boolean;
  readonly queues: Queues;
  /** Plain commands only. */
  readonly redis: RedisClient;
  readonly target: RedisTarget;
  readonly embeddedRedis: boolean;
  readonly prefix: string;
  readonly runPaths: RunRequestPaths;
  readonly slots: RunSlots;
  readonly audit: AuditLog;
  readonly killSwitch: KillSwitch;
  readonly sseMaxClients: number;
  /** SCQ_ACCESS_LOG_LEVEL; unset: info. */
  readonly accessLogLevel?: AccessLogLevel;
  /** SCQ_HTTP_REQUEST_TIMEOUT_SECONDS, in ms: the longest a client may take to send a whole request. */
  readonly requestTimeoutMs: number;
  readonly log: Logger;
  /** Routers mounted by other features; `public` ones skip the token (they carry their own check). */
  readonly routes?: ReadonlyArray<{ path: string; router: Router; public?: boolean }>;
}

function boardRouter(queues: Queues, readOnly: boolean): Router {
  const board = new ExpressAdapter();
  board.setBasePath(BOARD_PATH);
  createBullBoard({
    queues: queues.all.map((q) => new BullMQAdapter(q, { readOnlyMode: readOnly, allowRetries: !readOnly })),
    serverAdapter: board,
    options: { uiConfig: { boardTitle: "sandcastle-queue" } },
  });
  return board.getRouter() as Router;
}

/** The package's version (the OpenAPI document's), read through the package's own export of package.json. */
export const SERVICE_VERSION: string = (createRequire(import.meta.url)("sandcastle-queue/package.json") as { version: string }).version;

/** Wrong methods on the routes of this file (the board and the webhook answer their own). */
const servedHere = (paths: readonly string[]) => methodNotAllowed(SERVICE_OPERATIONS.filter((o) => paths.includes(o.path)));

export function createApp(deps: HttpDeps, metrics: ServiceMetrics): Express {
  const app = express();
  app.disable("x-powered-by");
  app.use(accessLog(deps.log, deps.accessLogLevel ?? "info"));
  app.use(checkHost(deps.allowedHosts, deps.tokens.admin !== undefined));

  app.get("/healthz", (_req, res) => {
    res.json({ ok: true });
  });
  app.use(servedHere(["/healthz"]));

  for (const r of deps.routes ?? []) if (r.public) app.use(r.path, r.router);

  const sessions = new SessionStore(deps.redis, deps.prefix, deps.tokens);
  app.use(sameOriginWrites);
  if (deps.tokens.admin === undefined) {
    app.get(LOGIN_PATH, (_req, res) => res.redirect(303, BOARD_PATH));
  } else {
    app.use(loginRouter(deps.tokens, sessions, BOARD_PATH));
  }
  app.use(servedHere([LOGIN_PATH, "/logout"]));

  app.use(authenticate(deps.tokens, sessions, LOGIN_PATH), sameOriginWrites);

  app.get("/readyz", async (_req, res) => {
    try {
      const pong = await Promise.race([deps.redis.ping(), new Promise<string>((_, rej) => setTimeout(() => rej(new Error("timeout")), 1000))]);
      res.status(pong === "PONG" ? 200 : 503).json({ ready: pong === "PONG" });
    } catch {
      res.status(503).json({ ready: false, message: "Redis does not answer" });
    }
  });

  app.get(METRICS_PATH, async (_req, res) => {
    res.setHeader("Content-Type", metrics.registry.contentType);
    res.send(await metrics.registry.metrics());
  });
  app.use(servedHere(["/readyz", METRICS_PATH]));

  // Viewers get a read-only board whatever SCQ_BOARD_READ_ONLY says; admins get what it says.
  const readOnlyBoard = boardRouter(deps.queues, true);
  const adminBoard = deps.boardReadOnly ? readOnlyBoard : boardRouter(deps.queues, false);
  app.use(BOARD_PATH, boardPagePolicy, (req: Request, res: Response, next) => {
    if (authOf(res).role === "admin") return adminBoard(req, res, next);
    if (req.method !== "GET" && req.method !== "HEAD") return requireAdmin(req, res, next);
    return readOnlyBoard(req, res, next);
  });

  const sessionLogs = sessionEventsHandler({
    target: deps.target,
    redis: deps.redis,
    prefix: deps.prefix,
    runs: deps.queues.sandcastleRun,
    maxClients: deps.sseMaxClients,
    log: deps.log,
  });
  app.use(
    API_PATH,
    apiRouter({
      queues: deps.queues,
      redis: deps.redis,
      prefix: deps.prefix,
      runPaths: deps.runPaths,
      slots: deps.slots,
      audit: deps.audit,
      killSwitch: deps.killSwitch,
      redisInfo: { url: describeTarget(deps.target), embedded: deps.embeddedRedis },
      sessionLogs,
      version: SERVICE_VERSION,
      onSkippedAtEnqueue: (result) => metrics.observeRun(result),
      log: deps.log,
    }),
  );

  for (const r of deps.routes ?? []) if (!r.public) app.use(r.path, r.router);
  app.use((req: Request, res: Response) => sendProblem(res, "not_found", `no such path: ${req.path}`));
  return app;
}

export async function startHttpServer(deps: HttpDeps): Promise<{ server: Server; url: string; close(): Promise<void> }> {
  if (deps.tokens.admin === undefined && !isLoopback(deps.host)) {
    throw new AppError(
      "http_unsafe_bind",
      `refusing to serve on ${deps.host} without SCQ_API_TOKEN: set SCQ_API_TOKEN (16+ characters) or bind HOST to 127.0.0.1`,
    );
  }
  if (deps.tokens.admin === undefined) deps.log.warn("SCQ_API_TOKEN is not set: the HTTP server is open to anyone on this machine (loopback only)");
  const metrics = new ServiceMetrics({ queues: deps.queues, redis: deps.redis, target: deps.target, prefix: deps.prefix, log: deps.log });
  await metrics.start();
  const app = createApp(deps, metrics);
  // Node's defaults hold a connection that sends its request slowly for 300 s, and look only every 30 s.
  const server = createServer(
    {
      requestTimeout: deps.requestTimeoutMs,
      headersTimeout: Math.min(HEADERS_TIMEOUT_MS, deps.requestTimeoutMs),
      connectionsCheckingInterval: CONNECTIONS_CHECK_MS,
    },
    app,
  );
  server.listen(deps.port, deps.host);
  await once(server, "listening");
  const address = server.address();
  const port = typeof address === "object" && address !== null ? address.port : deps.port;
  const hostForUrl = deps.host.includes(":") && !deps.host.startsWith("[") ? `[${deps.host}]` : deps.host;
  const url = `http://${hostForUrl}:${port}`;
  return {
    server,
    url,
    close: async () => {
      await new Promise<void>((resolve) => {
        server.close(() => resolve());
        server.closeAllConnections();
      });
      await metrics.close();
    },
  };
}
