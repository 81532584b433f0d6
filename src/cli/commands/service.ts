// `start` (workers + HTTP), `worker` (workers only), `serve` (HTTP only): long-running, stopped by SIGTERM/SIGINT.
// Each announces itself in Redis while it runs (live-services.ts); a port already taken refuses it first.
import { enqueueReaction, enqueueResearchCompletion, openQueues, runRequestPaths } from "../../../queues/index.js";
import { startWorkers, WORKERS_STOP_MARGIN_MS } from "../../../workers/index.js";
import { AuditLog } from "../../audit/audit-log.js";
import { BOARD_PATH, startHttpServer } from "../../http/server.js";
import { TELEGRAM_WEBHOOK_PATH, telegramWebhookRouter } from "../../http/telegram-webhook.js";
import { KillSwitch } from "../../control/kill-switch.js";
import { CompletionTailer } from "../../margot/bridge/completion-tailer.js";
import { connectRedis } from "../../redis/connect.js";
import { createRedactor } from "../../redact/index.js";
import { DraftStore } from "../../margot/store/drafts.js";
import { RunSlots } from "../../sandcastle/worker/run-slots.js";
import { AppError } from "../../errors.js";
import { describeTarget } from "../../redis/target.js";
import { announceService, liveServicesHere } from "../live-services.js";
import type { Runtime } from "../runtime.js";

/**
 * A service's stderr is its log: JSON lines only (warnings included), so `| pino-pretty` or `| jq` reads every one.
 * The one plain line it may write is its last: the error it stops with (`sandcastle-queue: …`).
 */
export async function serviceCommand(rt: Runtime, parts: { workers: boolean; http: boolean }): Promise<void> {
  const { config, log, shutdown } = rt;
  shutdown.installSignalHandlers();
  if (parts.workers && !config.sandcastleEnabled) {
    log.warn(
      "runs are disabled (TAO_SANDCASTLE_ENABLED is not 1): every sandcastle-run job ends skipped / sandcastle_disabled until it is set and the service restarted",
    );
  }
  // HTTP first: a port already taken refuses this service before its workers join the Redis.
  const url = parts.http ? await startHttp(rt) : null;
  if (parts.workers) {
    const running = await startWorkers({ config, target: rt.site.target, queues: rt.queues, log, redis: rt.redis, killSwitch: rt.killSwitch });
    shutdown.add("workers", () => running.close(config.SCQ_SHUTDOWN_GRACE_SECONDS * 1000), config.SCQ_SHUTDOWN_GRACE_SECONDS * 1000 + WORKERS_STOP_MARGIN_MS);
    if (config.MARGOT_COMPLETE_PATH) {
      const queue = rt.queues.margotIntent;
      const tailer = new CompletionTailer({
        redis: rt.redis,
        prefix: config.SCQ_KEY_PREFIX,
        path: config.MARGOT_COMPLETE_PATH,
        pollMs: config.MARGOT_COMPLETE_POLL_MS,
        enqueue: async (completion) => {
          await enqueueResearchCompletion(queue, completion);
        },
        log,
      });
      tailer.start();
      shutdown.add("completion tailer", () => tailer.stop());
    }
  }
  const label = [parts.workers && "workers", parts.http && "http"].filter(Boolean).join(" + ");
  const withdraw = await announceService(rt.redis, config.SCQ_KEY_PREFIX, { parts: label, url, redis: describeTarget(rt.site.target) });
  shutdown.add("service record", withdraw);
  process.stdout.write(
    `sandcastle-queue: ${label} running on ${rt.site.embedded ? "embedded Redis" : rt.site.target.kind === "cluster" ? "REDIS_CLUSTER_NODES" : "REDIS_URL"}; Ctrl-C to stop\n`,
  );
}

/** The HTTP side (API, Bull Board, the Telegram webhook) on its own Redis connection; its URL. */
async function startHttp(rt: Runtime): Promise<string> {
  const { config, log, shutdown } = rt;
  if (!config.REVIEW_CHAT_ID) log.warn("REVIEW_CHAT_ID is not set: the Telegram webhook answers 503 to every update");
  const audit = new AuditLog(config.AUDIT_LOG_PATH, createRedactor());
  shutdown.add("http audit log", () => audit.close());
  // Its own connection, failing at once while Redis is away: a request answered 503 must not enqueue later.
  const redis = await connectRedis(rt.site.target, "server");
  shutdown.add("http redis connection", async () => {
    await redis.quit().catch(() => redis.disconnect());
  });
  const queues = openQueues(redis, config.SCQ_KEY_PREFIX);
  shutdown.add("http queues", () => queues.close());
  let http: Awaited<ReturnType<typeof startHttpServer>>;
  try {
    http = await startHttpServer({
      host: config.HOST,
      port: config.PORT,
      tokens: { admin: config.SCQ_API_TOKEN, viewer: config.SCQ_VIEWER_TOKEN },
      allowedHosts: config.allowedHosts,
      boardReadOnly: config.SCQ_BOARD_READ_ONLY === "1",
      queues,
      redis,
      target: rt.site.target,
      embeddedRedis: rt.site.embedded !== null,
      prefix: config.SCQ_KEY_PREFIX,
      runPaths: runRequestPaths(config),
      slots: new RunSlots(redis, config.SCQ_KEY_PREFIX, config.MAX_CONCURRENT_SANDCASTLE_RUNS),
      audit,
      killSwitch: new KillSwitch(redis, config.SCQ_KEY_PREFIX, config.KILL_SWITCH_FILE),
      sseMaxClients: config.SCQ_SSE_MAX_CLIENTS,
      accessLogLevel: config.SCQ_ACCESS_LOG_LEVEL,
      requestTimeoutMs: config.SCQ_HTTP_REQUEST_TIMEOUT_SECONDS * 1000,
      log,
      routes: [
        {
          path: TELEGRAM_WEBHOOK_PATH,
          public: true,
          router: telegramWebhookRouter({
            secret: config.TELEGRAM_WEBHOOK_SECRET,
            filter: config.REVIEW_CHAT_ID ? { chatId: config.REVIEW_CHAT_ID, reviewerIds: config.reviewerIds } : null,
            drafts: new DraftStore(redis, config.SCQ_KEY_PREFIX),
            enqueueReaction: (input, jobId) => enqueueReaction(queues.margotIntent, input, jobId),
            log,
          }),
        },
      ],
    });
  } catch (err) {
    if ((err as NodeJS.ErrnoException).code === "EADDRINUSE") throw new AppError("http_port_in_use", await portTaken(rt));
    throw err;
  }
  shutdown.add("http server", () => http.close());
  log.info({ url: `${http.url}${BOARD_PATH}` }, "Bull Board is up");
  process.stdout.write(`sandcastle-queue: Bull Board at ${http.url}${BOARD_PATH}\n`);
  return http.url;
}

/** Why HOST:PORT cannot be had: the live service of this Redis that holds it (its pid and URL), or another program. */
async function portTaken(rt: Runtime): Promise<string> {
  const { HOST: host, PORT: port } = rt.config;
  const live = await liveServicesHere(rt.redis, rt.config.SCQ_KEY_PREFIX).catch(() => []);
  const holder = live.find((s) => s.url !== null && new URL(s.url).port === String(port));
  if (holder) {
    return (
      `a sandcastle-queue service is already running here: pid ${holder.pid} (${holder.parts}, since ${holder.started_at}) at ${holder.url}, on ${holder.redis}; ` +
      `use that one (\`sandcastle-queue status\` reaches it), or stop it first (Ctrl-C in its terminal, or kill ${holder.pid}); a second HTTP server needs another PORT`
    );
  }
  return `cannot listen on ${host}:${port}: another program holds that port (no sandcastle-queue service of this Redis does); stop it, or set PORT (and HOST) to a free one`;
}
