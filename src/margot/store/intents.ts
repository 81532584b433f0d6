// What the bridge decided per interaction, in Redis: the first job to decide an interaction
// claims it (atomically), its retries resume that decision, and any later job for the same
// interaction is a duplicate — however it got there (enqueued twice, the completed job already
// removed, the tailer re-reading a line). The one exception is loop detection (rules.ts, rule 1): an
// interaction whose draft was rejected is answered `suppressed / recently_rejected` for
// MARGOT_SUPPRESS_SECONDS, and forgotten after that.
import type { RedisClient } from "../../redis/connect.js";
import { hashFromReply, RedisScript } from "../../redis/script.js";
import { EffectLog } from "./effects.js";
import type { MargotIntentResult } from "../contract.js";
import type { NewDraft } from "./drafts.js";
import type { FollowUpRequest } from "./follow-ups.js";

/** How long a decided interaction is remembered (for duplicates), beyond any BullMQ job retention. */
export const INTENT_MEMORY_S = 30 * 86400;

export interface IntentRecord {
  /** `<job id>@<job timestamp>`: the job that owns this decision. */
  readonly job: string;
  readonly result: MargotIntentResult;
  /** The draft to create, when the decision is to draft (it is stored in its own hash, not here; an
   * earlier version stored it here too, which a retry of its jobs still reads). */
  readonly draft: NewDraft | null;
  /** The new research to ask for, when the decision is follow_up. */
  readonly follow_up?: FollowUpRequest | null;
  readonly decided_at: string;
}

/**
 * The claim as a Lua function, shared by CLAIM and the draft claim (draft-claim.ts). ARGV[first..last]
 * are the record's field/value pairs.
 * Returns  {1}            claimed: the record is this decision
 *          {2, hash}      this job had claimed it already (a retry): resume the stored decision
 *          {0, hash}      another job owns it: a duplicate
 *          {3, until}     the interaction is suppressed (until), which the decision did not know: decide again
 * The first job to decide an interaction claims it; while it is suppressed, a decision made
 * knowing so replaces the earlier one (loop detection answers `suppressed`).
 */
export const CLAIM_LUA = `
local function claim_intent(intent_key, suppress_key, job, under, ttl, first, last)
  local owner = redis.call('HGET', intent_key, 'job')
  if owner == job then return {2, redis.call('HGETALL', intent_key)} end
  local suppressed = redis.call('GET', suppress_key)
  if suppressed then
    if suppressed ~= under then return {3, suppressed} end
  elseif owner then
    return {0, redis.call('HGETALL', intent_key)}
  end
  redis.call('DEL', intent_key)
  redis.call('HSET', intent_key, 'job', job, unpack(ARGV, first, last))
  redis.call('EXPIRE', intent_key, ttl)
  return {1}
end
`;

/**
 * KEYS[1]  intent hash   KEYS[2] suppression key
 * ARGV[1]  job key       ARGV[2] the suppression the decision was made under ('' for none)
 * ARGV[3]  ttl (s)       ARGV[4..] field/value pairs of the record
 */
const CLAIM = new RedisScript(`${CLAIM_LUA}
return claim_intent(KEYS[1], KEYS[2], ARGV[1], ARGV[2], tonumber(ARGV[3]), 4, #ARGV)
`);

/** A record as claimed, with the effects already done for it. */
export interface StoredIntent {
  readonly record: IntentRecord;
  readonly effects: EffectLog;
}

export interface ClaimOptions {
  /** The suppression the decision was made under (null: it knew of none). */
  readonly suppressedUntil: Date | null;
  readonly ttlS: number;
}

export type ClaimReply = [code: number, payload?: string[] | string];

export type ClaimOutcome =
  | ({ readonly outcome: "claimed" | "resumed" | "taken" } & StoredIntent)
  | { readonly outcome: "suppressed"; readonly until: Date };

export class IntentStore {
  private readonly base: string;

  constructor(
    /** The connection the stores share (the draft claim's script runs on it too). */
    readonly redis: RedisClient,
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

  /**
   * Claims the interaction for `record` in one round trip, or answers with the record that owns it.
   * `suppressedUntil`: the suppression the decision was made under (null: it knew of none).
   */
  async claim(record: IntentRecord, opts: ClaimOptions): Promise<ClaimOutcome> {
    const reply = (await CLAIM.run(this.redis, this.claimKeys(record), this.claimArgs(record, opts))) as ClaimReply;
    return this.claimOutcome(record, reply);
  }

  /** The keys claim_intent takes, in its order. */
  claimKeys(record: IntentRecord): string[] {
    const id = record.result.interaction_id;
    return [this.key(id), this.suppressKey(id)];
  }

  /** claim_intent's arguments: job, suppression, ttl, then the record's fields (the draft itself lives in its own hash). */
  claimArgs(record: IntentRecord, opts: ClaimOptions): string[] {
    return [
      record.job,
      opts.suppressedUntil?.toISOString() ?? "",
      String(Math.max(1, Math.ceil(opts.ttlS))),
      "result",
      JSON.stringify(record.result),
      "follow_up",
      record.follow_up ? JSON.stringify(record.follow_up) : "",
      "decided_at",
      record.decided_at,
    ];
  }

  /** claim_intent's reply as an outcome. */
  claimOutcome(record: IntentRecord, [code, payload]: ClaimReply): ClaimOutcome {
    const id = record.result.interaction_id;
    const key = this.key(id);
    if (code === 1) return { outcome: "claimed", record, effects: EffectLog.fresh(this.redis, key) };
    if (code === 3) return { outcome: "suppressed", until: new Date(String(payload)) };
    const hash = hashFromReply(payload as string[]);
    const stored = parseRecord(hash);
    // The script writes job and result together: a job without a result was not written by it.
    if (!stored) throw new Error(`intent ${id} in Redis has a job but no result`);
    return { outcome: code === 2 ? "resumed" : "taken", record: stored, effects: EffectLog.fromHash(this.redis, key, hash) };
  }

  /** A flag set once until cleared (e.g. "the kill switch notice was sent"): true for the caller that set it. */
  async markOnce(name: string): Promise<boolean> {
    return (await this.redis.set(this.markKey(name), new Date().toISOString(), "NX")) === "OK";
  }

  async hasMark(name: string): Promise<boolean> {
    return (await this.redis.exists(this.markKey(name))) === 1;
  }

  async clearMark(name: string): Promise<void> {
    await this.redis.del(this.markKey(name));
  }

  markKey(name: string): string {
    return `${this.base}:mark:${name}`;
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
}

function parseRecord(raw: Readonly<Record<string, string>>): IntentRecord | null {
  if (raw.job === undefined || raw.result === undefined) return null;
  return {
    job: raw.job,
    result: JSON.parse(raw.result) as MargotIntentResult,
    draft: raw.draft ? (JSON.parse(raw.draft) as NewDraft) : null,
    follow_up: raw.follow_up ? (JSON.parse(raw.follow_up) as FollowUpRequest) : null,
    decided_at: raw.decided_at ?? "",
  };
}
