// Per-test isolation on the shared Redis: a unique hash-tagged prefix, temp dirs, and cleanup of both.
import { randomBytes } from "node:crypto";
import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { Redis } from "ioredis";
import { inject } from "vitest";
import type { RedisBackend } from "./redis-backend.js";

export type { RedisBackend };

export function redisUrl(): string {
  return inject("redisUrl");
}

export function uniquePrefix(): string {
  return `{scqt-${randomBytes(5).toString("hex")}}`;
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
  const url = redisUrl();
  return { env: { REDIS_URL: url }, client: () => new Redis(url, { maxRetriesPerRequest: null }), deletePrefix: (prefix) => deletePrefix(url, prefix) };
}
