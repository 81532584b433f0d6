// `start` (workers + HTTP), `worker` (workers only), `serve` (HTTP only): long-running, stopped by SIGTERM/SIGINT.
import { startWorkers } from "../../../workers/index.js";
import { BOARD_PATH, startHttpServer } from "../../http/server.js";
import type { Runtime } from "../runtime.js";

export async function serviceCommand(rt: Runtime, parts: { workers: boolean; http: boolean }): Promise<void> {
  const { config, log, shutdown } = rt;
  shutdown.installSignalHandlers();
  if (parts.workers) {
    const running = await startWorkers({ config, target: rt.site.target, queues: rt.queues, log, redis: rt.redis, killSwitch: rt.killSwitch });
    shutdown.add("workers", () => running.close(config.SCQ_SHUTDOWN_GRACE_SECONDS * 1000));
  }
  if (parts.http) {
    const http = await startHttpServer({
      host: config.HOST,
      port: config.PORT,
      token: config.SCQ_API_TOKEN,
      boardReadOnly: config.SCQ_BOARD_READ_ONLY === "1",
      queues: rt.queues.all,
      redis: rt.redis,
      log,
    });
    shutdown.add("http server", () => http.close());
    log.info({ url: `${http.url}${BOARD_PATH}` }, "Bull Board is up");
    process.stdout.write(`sandcastle-queue: Bull Board at ${http.url}${BOARD_PATH}\n`);
  }
  process.stdout.write(`sandcastle-queue: ${[parts.workers && "workers", parts.http && "http"].filter(Boolean).join(" + ")} running on ${rt.site.embedded ? "embedded Redis" : "REDIS_URL"}; Ctrl-C to stop\n`);
}
