// What every CLI command opens first: config, logger, the Redis site (embedded or URL), queues, kill switch.
import type { RedisClient } from "../redis/connect.js";
import { openQueues, type Queues } from "../../queues/index.js";
import { loadConfig, type Config } from "../config.js";
import { KillSwitch } from "../control/kill-switch.js";
import { createLogger, type Logger } from "../log.js";
import { checkRedis, connectRedis, resolveRedisSite, type RedisSite } from "../redis/connect.js";
import { Shutdown } from "../shutdown.js";

export interface Runtime {
  readonly config: Config;
  readonly log: Logger;
  readonly shutdown: Shutdown;
  readonly site: RedisSite;
  /** Plain commands (GET/SET/PUBLISH); never used for blocking calls. */
  readonly redis: RedisClient;
  readonly queues: Queues;
  readonly killSwitch: KillSwitch;
}

/**
 * `service` (start/worker/serve) keeps retrying through Redis outages;
 * `client` (one-shot commands) fails fast with a clear error.
 */
export async function openRuntime(role: "service" | "client"): Promise<Runtime> {
  const config = loadConfig();
  const log = createLogger(config.LOG_LEVEL);
  const shutdown = new Shutdown(log);
  try {
    const site = await resolveRedisSite({ REDIS_URL: config.REDIS_URL, cluster: config.redisCluster, SCQ_DATA_DIR: config.SCQ_DATA_DIR, registryDir: config.embeddedRegistryDir }, log, (others) => {
      process.stderr.write(
        `sandcastle-queue: warning: no embedded Redis answers in ${config.SCQ_DATA_DIR}, so a new, empty one starts there; ` +
          `one is live in ${others.join(", ")}: set SCQ_DATA_DIR=${others[0]} to reach that service\n`,
      );
    });
    const embedded = site.embedded;
    if (embedded?.owned) {
      shutdown.add("embedded redis", () => embedded.stop());
      shutdown.onImmediateExit(() => {
        if (embedded.pid !== null) process.kill(embedded.pid, "SIGTERM");
      });
    }
    await checkRedis(site.target);
    const redis = await connectRedis(site.target, role === "service" ? "worker" : "producer");
    shutdown.add("redis connection", async () => {
      await redis.quit().catch(() => redis.disconnect());
    });
    const queues = openQueues(redis, config.SCQ_KEY_PREFIX);
    shutdown.add("queues", () => queues.close());
    const killSwitch = new KillSwitch(redis, config.SCQ_KEY_PREFIX, config.KILL_SWITCH_FILE);
    return { config, log, shutdown, site, redis, queues, killSwitch };
  } catch (err) {
    await shutdown.run();
    throw err;
  }
}
