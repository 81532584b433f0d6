// Which Redis a test scope's processes and its own client use: the shared test server (scope.ts), or a cluster (redis-cluster.ts).
import type { RedisClient } from "../../src/redis/connect.js";

export interface RedisBackend {
  /** What the CLI processes get (REDIS_URL or REDIS_CLUSTER_NODES). */
  readonly env: Record<string, string | undefined>;
  /** A client for the test itself (BullMQ-ready: retries forever). */
  client(): RedisClient;
  deletePrefix(prefix: string): Promise<void>;
}
