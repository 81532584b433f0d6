// Per-test isolation on the shared Redis: a unique hash-tagged prefix, temp dirs, and cleanup of both.
import { randomBytes } from "node:crypto";
import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { Redis } from "ioredis";
import { afterAll, afterEach, beforeAll, beforeEach, inject } from "vitest";
import type { RedisBackend } from "./redis-backend.js";

export type { RedisBackend };

export function redisUrl(): string {
  return inject("redisUrl");
}

export function uniquePrefix(): string {
  return `{scqt-${randomBytes(5).toString("hex")}}`;
}

/** For a describe block: one connection to the tests' Redis, and a fresh prefix per test whose keys are deleted after it. */
export function useRedisPrefix(): { readonly redis: Redis; readonly prefix: string } {
  let redis: Redis | null = null;
  let prefix = "";
  beforeAll(() => {
    redis = new Redis(redisUrl());
  });
  afterAll(() => redis?.disconnect());
  beforeEach(() => {
    prefix = uniquePrefix();
  });
  afterEach(() => deletePrefix(redisUrl(), prefix));
  return {
    get redis() {
      if (!redis) throw new Error("useRedisPrefix: the connection exists only inside the describe block's tests");
      return redis;
    },
    get prefix() {
      return prefix;
    },
  };
}

export function tempDir(label = "scq"): { path: string; remove(): void } {
  // Short base: embedded Redis sockets must stay under 107 bytes.
  const path = mkdtempSync(join(tmpdir(), `${label}-`));
  return { path, remove: () => rmSync(path, { recursive: true, force: true }) };
}

export async function deletePrefix(url: string, prefix: string): Promise<void> {
  const r = new Redis(url);
  try {
    let cursor = "0";
    do {
      const [next, keys] = await r.scan(cursor, "MATCH", `${prefix}*`, "COUNT", 1000);
      cursor = next;
      if (keys.length > 0) await r.del(...keys);
    } while (cursor !== "0");
  } finally {
    r.disconnect();
  }
}

export function sharedRedis(): RedisBackend {
  return redisAt(redisUrl());
}

/** A Redis of the test's own (one it kills and restarts), as a backend for the scopes. */
export function redisAt(url: string): RedisBackend {
  return { env: { REDIS_URL: url }, client: () => new Redis(url, { maxRetriesPerRequest: null }), deletePrefix: (prefix) => deletePrefix(url, prefix) };
}
