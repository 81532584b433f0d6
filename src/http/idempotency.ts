// `Idempotency-Key` on POSTs that enqueue: the first request with a key claims it (SET NX, kept a day) and
// records what it answered; a repeat with the same body gets that same answer, status and body, marked
// `Idempotent-Replayed: true`; a repeat with another body is refused (422): a key names one request, not one
// slot to overwrite. Bodies are compared as canonical JSON (object keys sorted): the same JSON with its keys in
// another order, or spaced otherwise, is the same body.
import { createHash } from "node:crypto";
import type { RedisClient } from "../redis/connect.js";

export const IDEMPOTENCY_TTL_SECONDS = 24 * 3600;
/** 1-200 visible ASCII characters. */
export const IDEMPOTENCY_KEY_SHAPE = /^[\x21-\x7e]{1,200}$/;
const PENDING = "pending";

export type IdempotencyClaim =
  | { readonly kind: "first"; record(status: number, answer: unknown): Promise<void>; release(): Promise<void> }
  | { readonly kind: "repeat"; readonly status: number; readonly answer: unknown }
  | { readonly kind: "in_progress" }
  | { readonly kind: "conflict" };

export function validIdempotencyKey(key: string): boolean {
  return IDEMPOTENCY_KEY_SHAPE.test(key);
}

export async function claimIdempotencyKey(redis: RedisClient, prefix: string, scope: string, key: string, body: unknown): Promise<IdempotencyClaim> {
  const redisKey = `${prefix}:idempotency:${scope}:${createHash("sha256").update(key).digest("hex")}`;
  const bodyHash = createHash("sha256").update(canonicalJson(body)).digest("hex");
  const claimed = await redis.set(redisKey, JSON.stringify({ body: bodyHash, answer: PENDING }), "EX", IDEMPOTENCY_TTL_SECONDS, "NX");
  if (claimed === "OK") {
    return {
      kind: "first",
      record: async (status, answer) => {
        await redis.set(redisKey, JSON.stringify({ body: bodyHash, status, answer }), "EX", IDEMPOTENCY_TTL_SECONDS);
      },
      release: async () => {
        await redis.del(redisKey);
      },
    };
  }
  const raw = await redis.get(redisKey);
  if (raw === null) return claimIdempotencyKey(redis, prefix, scope, key, body);
  const stored = JSON.parse(raw) as { body: string; status?: number; answer: unknown };
  if (stored.body !== bodyHash) return { kind: "conflict" };
  if (stored.answer === PENDING) return { kind: "in_progress" };
  // A key recorded before statuses were (within its day) answers as repeats did then.
  return { kind: "repeat", status: stored.status ?? 200, answer: stored.answer };
}

/** JSON with every object's keys in one order, whatever order they came in (the body's depth is bounded: json-body.ts). */
export function canonicalJson(value: unknown): string {
  return JSON.stringify(value, (_key, v: unknown) =>
    v !== null && typeof v === "object" && !Array.isArray(v) ? Object.fromEntries(Object.entries(v).sort(([a], [b]) => (a < b ? -1 : a > b ? 1 : 0))) : v,
  );
}
