// BullMQ loses jobs silently under any eviction policy but noeviction (guide/going-to-production.md).
import type { Redis } from "ioredis";
import { AppError } from "../errors.js";

export async function readEvictionPolicy(redis: Redis): Promise<string | null> {
  try {
    const reply = (await redis.config("GET", "maxmemory-policy")) as string[];
    if (reply[1]) return reply[1];
  } catch {
    // Managed Redis often forbids CONFIG; INFO says the same thing.
  }
  const info = await redis.info("memory");
  const match = /^maxmemory_policy:(\S+)/m.exec(info);
  return match?.[1] ?? null;
}

export async function assertNoEviction(redis: Redis, where: string): Promise<void> {
  const policy = await readEvictionPolicy(redis);
  if (policy !== null && policy !== "noeviction") {
    throw new AppError(
      "redis_eviction_policy",
      `Redis at ${where} has maxmemory-policy "${policy}": it may evict queued jobs under memory pressure. ` +
        `Set "maxmemory-policy noeviction" (redis.conf or CONFIG SET maxmemory-policy noeviction) and start again.`,
    );
  }
}
