import type { Worker, WorkerOptions, Processor } from "bullmq";
import type { RedisClient } from "../src/redis/connect.js";
import type { AuditLog } from "../src/audit/audit-log.js";
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
  readonly redis: RedisClient;
  readonly killSwitch: KillSwitch;
  readonly audit: AuditLog;
  /** The worker's own environment: where env manifests' values are read, at run time only. */
  readonly secretSource: NodeJS.ProcessEnv;
}

/** One queue's worker: its processor plus the hooks around BullMQ's Worker. */
export interface QueueWorkerSpec {
  readonly name: string;
  readonly processor: Processor;
  readonly concurrency: number;
  readonly options?: Partial<WorkerOptions>;
  attach?(worker: Worker): void;
  /** The shutdown grace ran out: stop active work so the worker can close. */
  onGraceExpired?(): void;
  close?(): Promise<void>;
}
