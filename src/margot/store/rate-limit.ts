// The drafts' rate limit: at most MARGOT_RATE_LIMIT_MAX drafts posted in any rolling window of
// MARGOT_RATE_WINDOW_SECONDS. Exact under concurrency (one Lua script decides), fair (drafts
// that had to wait are served before newer ones), and visible (a queued draft learns its number
// and when it may post).
import type { RedisClient } from "../../redis/connect.js";
import { RedisScript } from "../../redis/script.js";

/**
 * The decision as a Lua function, shared by ACQUIRE and the draft claim (draft-claim.ts).
 * posted zset: member = draft id, score = when it was posted in the window (ms)
 * waiting zset: member = draft id, score = when it was first queued (ms): FIFO order
 * Returns  {1, n}           granted: the draft is (or already was) one of the n drafts of the window
 *          {0, n, release}  queued: the draft would be number n (> max); it may post at `release` (ms)
 * Idempotent per draft id: a retry after a crash gets the same answer, never a second slot.
 */
export const ACQUIRE_LUA = `
local function acquire_slot(posted_key, waiting_key, id, max, window, now)
  redis.call('ZREMRANGEBYSCORE', posted_key, '-inf', now - window)
  if redis.call('ZSCORE', posted_key, id) then
    return {1, redis.call('ZCARD', posted_key)}
  end
  local posted = redis.call('ZCARD', posted_key)
  local rank = redis.call('ZRANK', waiting_key, id)
  local ahead = rank
  if not ahead then ahead = redis.call('ZCARD', waiting_key) end
  if ahead < max - posted then
    redis.call('ZADD', posted_key, now, id)
    redis.call('ZREM', waiting_key, id)
    redis.call('PEXPIRE', posted_key, window)
    return {1, posted + 1}
  end
  if not rank then redis.call('ZADD', waiting_key, now, id) end
  -- The k-th draft to wait for a slot gets the slot freed when the k-th oldest posted draft ages out
  -- (a further window later for each full round of max).
  local k = ahead - math.max(0, max - posted)
  local idx = k % max
  local rounds = math.floor(k / max)
  local entry = redis.call('ZRANGE', posted_key, idx, idx, 'WITHSCORES')
  local release = now + window
  if entry[2] then release = tonumber(entry[2]) + window * (rounds + 1) end
  return {0, posted + ahead + 1, release}
end
`;

/**
 * KEYS[1]  posted zset   KEYS[2] waiting zset
 * ARGV[1]  draft id   ARGV[2] max drafts per window   ARGV[3] window length (ms)   ARGV[4] now (ms)
 * KEYS[3], ARGV[5] (optional)  the draft's hash and the states in which it may count (comma-separated)
 * Returns  what acquire_slot returns, or {-1} when the draft is in none of the states given: nothing counted
 */
const ACQUIRE = new RedisScript(`${ACQUIRE_LUA}
if KEYS[3] then
  local state = redis.call('HGET', KEYS[3], 'state')
  local ok = false
  if state then
    for s in string.gmatch(ARGV[5], '[^,]+') do
      if s == state then ok = true end
    end
  end
  if not ok then return {-1} end
end
return acquire_slot(KEYS[1], KEYS[2], ARGV[1], tonumber(ARGV[2]), tonumber(ARGV[3]), tonumber(ARGV[4]))
`);

export type RateDecision =
  { readonly granted: true; readonly number: number } | { readonly granted: false; readonly number: number; readonly releaseAt: number };

/** Count the draft only while its hash says it is in one of these states (sent with the draft's creation). */
export interface DraftGuard {
  readonly key: string;
  readonly states: readonly string[];
}

export class DraftRateLimit {
  readonly postedKey: string;
  readonly waitingKey: string;

  constructor(
    private readonly redis: RedisClient,
    prefix: string,
    readonly max: number,
    readonly windowMs: number,
  ) {
    this.postedKey = `${prefix}:margot:rate:posted`;
    this.waitingKey = `${prefix}:margot:rate:waiting`;
  }

  async acquire(draftId: string, now = Date.now()): Promise<RateDecision> {
    return (await this.acquireIf(draftId, now, null))!;
  }

  /** `acquire`, but null (nothing counted) when the draft is not in one of the guard's states. */
  async acquireIf(draftId: string, now: number, guard: DraftGuard | null): Promise<RateDecision | null> {
    const keys = guard ? [this.postedKey, this.waitingKey, guard.key] : [this.postedKey, this.waitingKey];
    const args = [draftId, String(this.max), String(this.windowMs), String(now), ...(guard ? [guard.states.join(",")] : [])];
    const reply = (await ACQUIRE.run(this.redis, keys, args)) as number[];
    return reply[0] === -1 ? null : rateDecision(reply);
  }

  /** Drafts posted within the window now. */
  async inWindow(now = Date.now()): Promise<number> {
    return this.redis.zcount(this.postedKey, `(${now - this.windowMs}`, "+inf");
  }

  /** Drafts waiting for a slot. */
  waiting(): Promise<number> {
    return this.redis.zcard(this.waitingKey);
  }

  /** A queued draft that will never post (decided while waiting) stops holding its place. */
  async forget(draftId: string): Promise<void> {
    await this.redis.zrem(this.waitingKey, draftId);
  }
}

/** acquire_slot's reply as a decision. */
export function rateDecision([granted, n, release]: readonly number[]): RateDecision {
  if (granted === 1) return { granted: true, number: Number(n) };
  return { granted: false, number: Number(n), releaseAt: Number(release) };
}
