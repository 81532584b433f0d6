// Resolve which Redis this process talks to, open connections to it, and refuse a Redis that can evict jobs.
import { Redis } from "ioredis";
import { AppError } from "../errors.js";
import type { Logger } from "../log.js";
import { EmbeddedRedis } from "./embedded.js";
import { assertNoEviction } from "./eviction-policy.js";
import { describeTarget, redisOptions, type RedisRole, type RedisTarget } from "./target.js";

export interface RedisSite {
  readonly target: RedisTarget;
  /** Set when the embedded server is in use; `owned` when this process must stop it. */
  readonly embedded: EmbeddedRedis | null;
}

export interface SiteSettings {
  readonly REDIS_URL?: string | undefined;
  readonly SCQ_DATA_DIR: string;
  /** The user's list of embedded servers (see EmbeddedRedis); unset: not kept. */
  readonly registryDir?: string;
}

export async function resolveRedisSite(settings: SiteSettings, log: Logger, onOthersLive?: (dataDirs: readonly string[]) => void): Promise<RedisSite> {
  if (settings.REDIS_URL) return { target: { kind: "url", url: settings.REDIS_URL }, embedded: null };
  const embedded = await EmbeddedRedis.joinOrStart({
    dataDir: settings.SCQ_DATA_DIR,
    log,
    ...(settings.registryDir !== undefined ? { registryDir: settings.registryDir } : {}),
    ...(onOthersLive ? { onOthersLive } : {}),
  });
  return { target: { kind: "socket", path: embedded.socketPath }, embedded };
}

/**
 * A connection that is ready, or a clear error. Producers use it to fail fast;
 * workers use the same check once at start before handing retries to ioredis.
 */
export async function connectRedis(target: RedisTarget, role: RedisRole, timeoutMs = 5000): Promise<Redis> {
  const redis = new Redis({ ...redisOptions(target, role), lazyConnect: true });
  // Errors surface through connect(); without a listener ioredis prints them as unhandled.
  redis.on("error", () => {});
  try {
    await withTimeout(redis.connect(), timeoutMs);
    return redis;
  } catch (err) {
    redis.disconnect();
    throw new AppError(
      "redis_unavailable",
      `cannot reach Redis at ${describeTarget(target)}: ${(err as Error).message}. ` +
        "Start Redis (or `npm start` for the embedded one) or fix REDIS_URL.",
    );
  }
}

/** Open once at start: answers PING and keeps jobs (noeviction). */
export async function checkRedis(target: RedisTarget): Promise<void> {
  const redis = await connectRedis(target, "producer");
  try {
    await assertNoEviction(redis, describeTarget(target));
  } finally {
    redis.disconnect();
  }
}

function withTimeout<T>(promise: Promise<T>, ms: number): Promise<T> {
  return new Promise<T>((resolve, reject) => {
    const timer = setTimeout(() => reject(new Error(`no answer within ${ms} ms`)), ms);
    promise.then(
      (v) => {
        clearTimeout(timer);
        resolve(v);
      },
      (e: unknown) => {
        clearTimeout(timer);
        reject(e instanceof Error ? e : new Error(String(e)));
      },
    );
  });
}
