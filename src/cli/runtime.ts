// What every CLI command opens first: config, logger, the Redis site (embedded or URL), queues, kill switch.
import { openQueues, runsDeployment, type Queues } from "../../queues/index.js";
import type { Deployment } from "../sandcastle/deployment.js";
import { loadConfig, type Config } from "../config.js";
import { KillSwitch } from "../control/kill-switch.js";
import { createLogger, type Logger } from "../log.js";
import { checkRedis, connectRedis, resolveRedisSite, type RedisClient, type RedisSite } from "../redis/connect.js";
import { exitWhenFlushed } from "../flushed-exit.js";
import { RESTART_WINDOW_MS, RESTARTS_MAX, type EmbeddedRedis } from "../redis/embedded.js";
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
    const site = await resolveRedisSite(
      { REDIS_URL: config.REDIS_URL, cluster: config.redisCluster, SCQ_DATA_DIR: config.SCQ_DATA_DIR, registryDir: config.embeddedRegistryDir },
      log,
      (others) => {
        const warning =
          `no embedded Redis answers in ${config.SCQ_DATA_DIR}, so a new, empty one starts there; ` +
          `one is live in ${others.join(", ")}: set SCQ_DATA_DIR=${others[0]} to reach that service`;
        // A service's stderr is its JSON log; a one-shot command speaks to a person.
        if (role === "service") log.warn(warning);
        else process.stderr.write(`sandcastle-queue: warning: ${warning}\n`);
      },
    );
    const embedded = site.embedded;
    if (embedded) {
      // Whether this process owns it is read at exit: a service's watch may have started it again since.
      shutdown.add("embedded redis", () => embedded.stop());
      shutdown.onImmediateExit(() => {
        if (embedded.pid !== null) process.kill(embedded.pid, "SIGTERM");
      });
      if (role === "service") watchEmbeddedRedis(embedded, shutdown, log);
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

/** The deployment this command acts for (key prefix + Redis): what it may see and touch in a shared RUNS_DIR (ADR 0044). */
export function runtimeDeployment(rt: Runtime): Deployment {
  return runsDeployment(rt.queues.sandcastleRun, rt.config.SCQ_KEY_PREFIX, rt.site.target);
}

/** How long a service whose Redis is gone for good spends stopping before it exits. */
const GIVE_UP_EXIT_MS = 10_000;

/** A service's embedded Redis that dies is started again (one line each time); past the bound the service stops, exit 1. */
function watchEmbeddedRedis(embedded: EmbeddedRedis, shutdown: Shutdown, log: Logger): void {
  const stopWatching = embedded.watch({
    onRestarted: ({ deadPid, pid, restart }) => {
      log.warn(
        { dead_redis_pid: deadPid, redis_pid: pid, restart, of: RESTARTS_MAX },
        `the embedded Redis${deadPid !== null ? ` (pid ${deadPid})` : ""} died; started it again on its AOF as pid ${pid} ` +
          `(restart ${restart} of at most ${RESTARTS_MAX} within ${RESTART_WINDOW_MS / 60_000} min)`,
      );
    },
    onGiveUp: (reason) => {
      log.fatal({ reason }, "stopping: the embedded Redis is gone");
      // The error it stops with: its one plain line, the last.
      process.stderr.write(`sandcastle-queue: ${reason}; stopping\n`);
      // Without Redis the teardowns wait for what cannot answer: bounded, then out (a run's child stops when we exit).
      const bound = new Promise((r) => setTimeout(r, GIVE_UP_EXIT_MS).unref());
      void Promise.race([shutdown.run(), bound]).then(() => exitWhenFlushed(1));
    },
  });
  // Registered after the Redis's own teardown, so it runs first: nothing starts the server while it is being stopped.
  shutdown.add("embedded redis watch", stopWatching);
}
