import type { Redis } from "ioredis";
import type { Config } from "../src/config.js";
import type { KillSwitch } from "../src/control/kill-switch.js";
import type { Logger } from "../src/log.js";
import type { RedisTarget } from "../src/redis/target.js";
import type { Queues } from "../queues/index.js";

/** What every processor factory gets: entry points build it, processors never read env themselves. */
export interface WorkerDeps {
  readonly config: Config;
  readonly target: RedisTarget;
  readonly queues: Queues;
  readonly log: Logger;
  /** Plain commands only (no blocking calls). */
  readonly redis: Redis;
  readonly killSwitch: KillSwitch;
}
