// What the bridge decided per interaction, in Redis: the first job to decide an interaction
// claims it (atomically), its retries resume that decision, and any later job for the same
// interaction is a duplicate — however it got there (enqueued twice, the completed job already
// removed, the tailer re-reading a line). The one exception is the seed's loop detection: an
// interaction whose draft was rejected is answered `suppressed / recently_rejected` for
// MARGOT_SUPPRESS_SECONDS, and forgotten after that.
import type { RedisClient } from "../redis/connect.js";
import type { MargotIntentResult } from "./contract.js";
import type { NewDraft } from "./drafts.js";
import type { FollowUpRequest } from "./follow-ups.js";

/** How long a decided interaction is remembered (for duplicates), beyond any BullMQ job retention. */
export const INTENT_MEMORY_S = 30 * 86400;

export interface IntentRecord {
  /** `<job id>@<job timestamp>`: the job that owns this decision. */
  readonly job: string;
  readonly result: MargotIntentResult;
  /** The draft to create, when the decision is to draft. */
  readonly draft: NewDraft | null;
  /** The new research to ask for, when the decision is follow_up. */
  readonly follow_up?: FollowUpRequest | null;
  readonly decided_at: string;
}

/**
 * KEYS[1]  intent hash
 * ARGV[1]  job key   ARGV[2] '1' when this decision may replace another job's (loop detection)
 * ARGV[3]  ttl (s)   ARGV[4..] field/value pairs of the record
 * Returns  1 claimed, 2 this job had already claimed it (a retry), 0 another job owns it.
 */
const CLAIM = `
local job = redis.call('HGET', KEYS[1], 'job')
if job == ARGV[1] then return 2 end
if job and ARGV[2] ~= '1' then return 0 end
redis.call('DEL', KEYS[1])
redis.call('HSET', KEYS[1], 'job', ARGV[1], unpack(ARGV, 4))
redis.call('EXPIRE', KEYS[1], tonumber(ARGV[3]))
return 1
`;

export class IntentStore {
  private readonly base: string;

  constructor(
    private readonly redis: RedisClient,
    prefix: string,
  ) {
    this.base = `${prefix}:margot`;
  }

  key(interactionId: string): string {
    return `${this.base}:intent:${interactionId}`;
  }

  private suppressKey(interactionId: string): string {
    return `${this.base}:suppress:${interactionId}`;
  }

  async get(interactionId: string): Promise<IntentRecord | null> {
    const raw = await this.redis.hgetall(this.key(interactionId));
    if (raw.job === undefined || raw.result === undefined) return null;
    return {
      job: raw.job,
      result: JSON.parse(raw.result) as MargotIntentResult,
      draft: raw.draft ? (JSON.parse(raw.draft) as NewDraft) : null,
      follow_up: raw.follow_up ? (JSON.parse(raw.follow_up) as FollowUpRequest) : null,
      decided_at: raw.decided_at ?? "",
    };
  }

  async claim(record: IntentRecord, opts: { replace: boolean; ttlS: number }): Promise<"claimed" | "resumed" | "taken"> {
    const code = await this.redis.eval(
      CLAIM,
      1,
      this.key(record.result.interaction_id),
      record.job,
      opts.replace ? "1" : "0",
      String(Math.max(1, Math.ceil(opts.ttlS))),
      "result",
      JSON.stringify(record.result),
      "draft",
      record.draft ? JSON.stringify(record.draft) : "",
      "follow_up",
      record.follow_up ? JSON.stringify(record.follow_up) : "",
      "decided_at",
      record.decided_at,
    );
    return code === 1 ? "claimed" : code === 2 ? "resumed" : "taken";
  }

  /** The final result (e.g. drafted vs queued_rate_limit), for duplicates to report. */
  async setResult(result: MargotIntentResult): Promise<void> {
    await this.redis.hset(this.key(result.interaction_id), "result", JSON.stringify(result));
  }

  /** Like DraftStore.once: the effect runs unless recorded as done; recorded after it succeeds. */
  async once(interactionId: string, name: string, effect: () => Promise<void>): Promise<boolean> {
    const key = this.key(interactionId);
    const field = `fx:${name}`;
    if ((await this.redis.hexists(key, field)) === 1) return false;
    await effect();
    await this.redis.hset(key, field, new Date().toISOString());
    return true;
  }

  /** A flag set once until cleared (e.g. "the kill switch notice was sent"): true for the caller that set it. */
  async markOnce(name: string): Promise<boolean> {
    return (await this.redis.set(`${this.base}:mark:${name}`, new Date().toISOString(), "NX")) === "OK";
  }

  async clearMark(name: string): Promise<void> {
    await this.redis.del(`${this.base}:mark:${name}`);
  }

  /** Loop detection: after a rejection, the interaction is suppressed, and its decision is forgotten when that ends. */
  async suppress(interactionId: string, untilMs: number, now = Date.now()): Promise<void> {
    const ttlMs = Math.max(1, untilMs - now);
    await this.redis
      .multi()
      .set(this.suppressKey(interactionId), new Date(untilMs).toISOString(), "PX", ttlMs)
      .pexpire(this.key(interactionId), ttlMs)
      .exec();
  }

  async suppressedUntil(interactionId: string): Promise<Date | null> {
    const raw = await this.redis.get(this.suppressKey(interactionId));
    return raw === null ? null : new Date(raw);
  }
}
