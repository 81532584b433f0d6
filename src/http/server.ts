// The HTTP face: Bull Board at /admin/queues, /healthz, /readyz; everything but /healthz behind SCQ_API_TOKEN.
import { once } from "node:events";
import type { Server } from "node:http";
import { isIP } from "node:net";
import { createBullBoard } from "@bull-board/api";
import { BullMQAdapter } from "@bull-board/api/bullMQAdapter";
import { ExpressAdapter } from "@bull-board/express";
import type { Queue } from "bullmq";
import express, { type Express, type Router } from "express";
import type { Redis } from "ioredis";
import { AppError } from "../errors.js";
import type { Logger } from "../log.js";
import { requireToken, sameOriginWrites } from "./auth.js";

export const BOARD_PATH = "/admin/queues";

export interface HttpDeps {
  readonly host: string;
  readonly port: number;
  readonly token: string | undefined;
  readonly boardReadOnly: boolean;
  readonly queues: readonly Queue[];
  readonly redis: Redis;
  readonly log: Logger;
  /** Routers mounted behind the token by later features (API, webhooks). */
  readonly routes?: ReadonlyArray<{ path: string; router: Router; public?: boolean }>;
}

export function isLoopback(host: string): boolean {
  if (host === "localhost") return true;
  if (isIP(host) === 4) return host.startsWith("127.");
  return host === "::1" || host === "[::1]";
}

export function createApp(deps: HttpDeps): Express {
  const app = express();
  app.disable("x-powered-by");

  app.get("/healthz", (_req, res) => {
    res.json({ ok: true });
  });

  for (const r of deps.routes ?? []) if (r.public) app.use(r.path, r.router);

  const auth = requireToken(deps.token);
  app.use(auth, sameOriginWrites);

  app.get("/readyz", async (_req, res) => {
    try {
      const pong = await Promise.race([deps.redis.ping(), new Promise<string>((_, rej) => setTimeout(() => rej(new Error("timeout")), 1000))]);
      res.status(pong === "PONG" ? 200 : 503).json({ ready: pong === "PONG" });
    } catch {
      res.status(503).json({ ready: false, message: "Redis does not answer" });
    }
  });

  const board = new ExpressAdapter();
  board.setBasePath(BOARD_PATH);
  createBullBoard({
    queues: deps.queues.map((q) => new BullMQAdapter(q, { readOnlyMode: deps.boardReadOnly, allowRetries: !deps.boardReadOnly })),
    serverAdapter: board,
    options: { uiConfig: { boardTitle: "sandcastle-queue" } },
  });
  app.use(BOARD_PATH, board.getRouter());

  for (const r of deps.routes ?? []) if (!r.public) app.use(r.path, r.router);
  return app;
}

export async function startHttpServer(deps: HttpDeps): Promise<{ server: Server; url: string; close(): Promise<void> }> {
  if (deps.token === undefined && !isLoopback(deps.host)) {
    throw new AppError(
      "http_unsafe_bind",
      `refusing to serve on ${deps.host} without SCQ_API_TOKEN: set SCQ_API_TOKEN (16+ characters) or bind HOST to 127.0.0.1`,
    );
  }
  if (deps.token === undefined) deps.log.warn("SCQ_API_TOKEN is not set: the HTTP server is open to anyone on this machine (loopback only)");
  const app = createApp(deps);
  const server = app.listen(deps.port, deps.host);
  await once(server, "listening");
  const address = server.address();
  const port = typeof address === "object" && address !== null ? address.port : deps.port;
  const hostForUrl = deps.host.includes(":") && !deps.host.startsWith("[") ? `[${deps.host}]` : deps.host;
  const url = `http://${hostForUrl}:${port}`;
  return {
    server,
    url,
    close: () =>
      new Promise<void>((resolve) => {
        server.close(() => resolve());
        server.closeAllConnections();
      }),
  };
}
