// `start` (workers + HTTP), `worker` (workers only), `serve` (HTTP only): long-running, stopped by SIGTERM/SIGINT.
import { enqueueReaction, enqueueResearchCompletion, openQueues, runRequestPaths } from "../../../queues/index.js";
import { startWorkers } from "../../../workers/index.js";
import { AuditLog } from "../../audit/audit-log.js";
import { BOARD_PATH, startHttpServer } from "../../http/server.js";
import { TELEGRAM_WEBHOOK_PATH, telegramWebhookRouter } from "../../http/telegram-webhook.js";
import { KillSwitch } from "../../control/kill-switch.js";
import { CompletionTailer } from "../../margot/completion-tailer.js";
import { connectRedis } from "../../redis/connect.js";
import { createRedactor } from "../../redact/index.js";
import { DraftStore } from "../../margot/drafts.js";
import { RunSlots } from "../../sandcastle/run-slots.js";
import type { Runtime } from "../runtime.js";

export async function serviceCommand(rt: Runtime, parts: { workers: boolean; http: boolean }): Promise<void> {
  const { config, log, shutdown } = rt;
  shutdown.installSignalHandlers();
  if (parts.workers && !config.sandcastleEnabled) {
    log.warn("TAO_SANDCASTLE_ENABLED is not 1: every sandcastle run is skipped (sandcastle_disabled) until it is set and the worker restarted");
    process.stderr.write("sandcastle-queue: warning: runs are disabled (TAO_SANDCASTLE_ENABLED is not 1): every sandcastle-run job ends skipped / sandcastle_disabled\n");
  }
  if (parts.workers) {
    const running = await startWorkers({ config, target: rt.site.target, queues: rt.queues, log, redis: rt.redis, killSwitch: rt.killSwitch });
    // The grace, then up to 8 s for stopped runs to record their outcome, then a margin.
    shutdown.add("workers", () => running.close(config.SCQ_SHUTDOWN_GRACE_SECONDS * 1000), config.SCQ_SHUTDOWN_GRACE_SECONDS * 1000 + 15_000);
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
  if (parts.http) {
    if (!config.REVIEW_CHAT_ID) {
      process.stderr.write("sandcastle-queue: warning: REVIEW_CHAT_ID is not set: the Telegram webhook answers 503 to every update\n");
    }
    const audit = new AuditLog(config.AUDIT_LOG_PATH, createRedactor());
    shutdown.add("http audit log", () => audit.close());
    // Its own connection, failing at once while Redis is away: a request answered 503 must not enqueue later.
    const redis = await connectRedis(rt.site.target, "server");
    shutdown.add("http redis connection", async () => {
      await redis.quit().catch(() => redis.disconnect());
    });
    const queues = openQueues(redis, config.SCQ_KEY_PREFIX);
    shutdown.add("http queues", () => queues.close());
    const http = await startHttpServer({
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
    shutdown.add("http server", () => http.close());
    log.info({ url: `${http.url}${BOARD_PATH}` }, "Bull Board is up");
    process.stdout.write(`sandcastle-queue: Bull Board at ${http.url}${BOARD_PATH}\n`);
  }
  process.stdout.write(`sandcastle-queue: ${[parts.workers && "workers", parts.http && "http"].filter(Boolean).join(" + ")} running on ${rt.site.embedded ? "embedded Redis" : rt.site.target.kind === "cluster" ? "REDIS_CLUSTER_NODES" : "REDIS_URL"}; Ctrl-C to stop\n`);
}
