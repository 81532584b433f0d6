// Run slots: a Redis ledger of the children running (or reserved) across all workers.
// BullMQ's global concurrency keeps a 4th job waiting; this ledger is what lets a request with
// on_capacity "skip" be answered at once and exactly, even when four arrive together (ADR 0001).
import type { RedisClient } from "../../redis/connect.js";

/**
 * KEYS[1]  slots zset: member = run id, score = lease expiry (ms since epoch)
 * ARGV[1]  run id
 * ARGV[2]  cap (max members)
 * ARGV[3]  now (ms)
 * ARGV[4]  lease length (ms)
 * Returns  1 when the run holds a slot (new or renewed), 0 when the cap is reached.
 */
const ACQUIRE = `
redis.call('ZREMRANGEBYSCORE', KEYS[1], '-inf', ARGV[3])
if redis.call('ZSCORE', KEYS[1], ARGV[1]) then
  redis.call('ZADD', KEYS[1], tonumber(ARGV[3]) + tonumber(ARGV[4]), ARGV[1])
  return 1
end
if redis.call('ZCARD', KEYS[1]) >= tonumber(ARGV[2]) then
  return 0
end
redis.call('ZADD', KEYS[1], tonumber(ARGV[3]) + tonumber(ARGV[4]), ARGV[1])
return 1
`;

/** A running child renews its lease well before it lapses; a dead worker's lease lapses on its own. */
export const LEASE_MS = 60_000;
export const RENEW_MS = 15_000;

export class RunSlots {
  readonly key: string;

  constructor(
    private readonly redis: RedisClient,
    prefix: string,
    private readonly cap: number,
  ) {
    this.key = `${prefix}:sandcastle-run:slots`;
  }

  async acquire(runId: string, leaseMs = LEASE_MS): Promise<boolean> {
    const got = await this.redis.eval(ACQUIRE, 1, this.key, runId, String(this.cap), String(Date.now()), String(leaseMs));
    return got === 1;
  }

  async release(runId: string): Promise<void> {
    await this.redis.zrem(this.key, runId);
  }

  /** Run ids holding a live slot. */
  async holders(): Promise<string[]> {
    return this.redis.zrangebyscore(this.key, Date.now(), "+inf");
  }

  /** Renew the lease every RENEW_MS until the returned stop function is called. */
  keepAlive(runId: string): () => void {
    const timer = setInterval(() => {
      void this.acquire(runId).catch(() => {});
    }, RENEW_MS);
    return () => clearInterval(timer);
  }
}
