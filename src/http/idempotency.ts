// `Idempotency-Key` on POSTs that enqueue: the first request with a key claims it (SET NX, kept a day) and
// records what it enqueued; a repeat with the same body gets that same answer (200), a repeat with another
// body is refused (422): a key names one request, not one slot to overwrite.
import { createHash } from "node:crypto";
import type { RedisClient } from "../redis/connect.js";

export const IDEMPOTENCY_TTL_SECONDS = 24 * 3600;
const KEY_SHAPE = /^[\x21-\x7e]{1,200}$/;
const PENDING = "pending";

export type IdempotencyClaim =
  | { readonly kind: "first"; record(answer: unknown): Promise<void>; release(): Promise<void> }
  | { readonly kind: "repeat"; readonly answer: unknown }
  | { readonly kind: "in_progress" }
  | { readonly kind: "conflict" };

export function validIdempotencyKey(key: string): boolean {
  return KEY_SHAPE.test(key);
}

export async function claimIdempotencyKey(redis: RedisClient, prefix: string, scope: string, key: string, body: unknown): Promise<IdempotencyClaim> {
  const redisKey = `${prefix}:idempotency:${scope}:${createHash("sha256").update(key).digest("hex")}`;
  const bodyHash = createHash("sha256").update(JSON.stringify(body)).digest("hex");
  const claimed = await redis.set(redisKey, JSON.stringify({ body: bodyHash, answer: PENDING }), "EX", IDEMPOTENCY_TTL_SECONDS, "NX");
  if (claimed === "OK") {
    return {
      kind: "first",
      record: async (answer) => {
        await redis.set(redisKey, JSON.stringify({ body: bodyHash, answer }), "EX", IDEMPOTENCY_TTL_SECONDS);
      },
      release: async () => {
        await redis.del(redisKey);
      },
    };
  }
  const raw = await redis.get(redisKey);
  if (raw === null) return claimIdempotencyKey(redis, prefix, scope, key, body);
  const stored = JSON.parse(raw) as { body: string; answer: unknown };
  if (stored.body !== bodyHash) return { kind: "conflict" };
  if (stored.answer === PENDING) return { kind: "in_progress" };
  return { kind: "repeat", answer: stored.answer };
}
