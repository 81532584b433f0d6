// Drafts in Redis: one hash per draft, an index for listing, message → draft lookups for the
// Telegram webhook, a bounded list of review notices, and the update_id dedup of webhooks.
//
// Every change of state goes through one Lua script (TRANSITION) so that two deciders racing
// (a 👍 and the 24 h expiry, two workers retrying one reaction) cannot both win: the first
// changes the state, the second is told what the state already is. States:
//
//   pending ──▶ queued (rate limit) ──▶ posting ──▶ posted ──▶ approved | rejected | expired
//      └──────────────────────────────▶ posting       │  ▲
//                                                      ▼  │ (resurface: a new expiry clock)
//                                                   deferred ──▶ approved | rejected
//
// `posting` is written before a draft is sent and `posted` right after: a retry that finds
// `posting` knows the send may have happened (ADR 0004).
import type { RedisClient } from "../../redis/connect.js";
import { hashFromReply, RedisScript } from "../../redis/script.js";
import { EffectLog } from "./effects.js";
import { z } from "zod";
import type { Classification } from "../contract.js";
import type { TicketInput } from "../ticket.js";
import type { ChannelKind, MessageRef } from "../../review/review-channel.js";

export const DraftState = z.enum(["pending", "queued", "posting", "posted", "deferred", "approved", "rejected", "expired"]);
export type DraftState = z.infer<typeof DraftState>;
/** A reaction on a draft in one of these changes nothing. */
export const DECIDED_STATES: readonly DraftState[] = ["approved", "rejected", "expired"];
/** A reaction is accepted in these. */
export const REACTABLE_STATES: readonly DraftState[] = ["posted", "deferred"];

export interface Draft {
  readonly id: string;
  readonly interaction_id: string;
  readonly state: DraftState;
  readonly title: string;
  /** The ticket body as reviewed: PII-redacted. */
  readonly body: string;
  /** The ticket's fields (PII-redacted) for rendering the approved issue. */
  readonly ticket: TicketInput;
  readonly target_repo: string | null;
  readonly project: string | null;
  readonly classification: Classification;
  readonly confidence: number;
  readonly channel: ChannelKind;
  /** Expiry clocks so far: 0 for the first post, +1 per resurface. */
  readonly generation: number;
  readonly messages: readonly MessageRef[];
  readonly created_at: string;
  readonly queued_at: string | null;
  readonly release_at: string | null;
  /** This draft's number in its window when it was counted against the rate limit. */
  readonly draft_number: number | null;
  readonly posted_at: string | null;
  readonly expires_at: string | null;
  readonly deferred_at: string | null;
  readonly resurface_at: string | null;
  readonly decided_at: string | null;
  /** telegram:<user id>, cli:<user>@<host>, timer. */
  readonly decided_by: string | null;
  readonly reject_reason: string | null;
  readonly linear_issue_id: string | null;
  readonly linear_issue_identifier: string | null;
  readonly linear_issue_url: string | null;
  readonly labels_applied: readonly string[];
  /** The random part of the Linear issue's marker (linear/issues.ts); null for a draft made before markers had one. */
  readonly marker_nonce: string | null;
}

export type NewDraft = Pick<
  Draft,
  "id" | "interaction_id" | "title" | "body" | "ticket" | "target_repo" | "project" | "classification" | "confidence" | "channel" | "created_at"
> & {
  readonly marker_nonce: string;
};

/** A new draft's hash and its place in the index, as a Lua function (shared with draft-claim.ts); ARGV[first..last] are its fields. */
export const CREATE_LUA = `
local function create_draft(draft_key, index_key, id, created_ms, first, last)
  redis.call('HSET', draft_key, unpack(ARGV, first, last))
  redis.call('ZADD', index_key, created_ms, id)
end
`;

/**
 * KEYS[1]  draft hash
 * KEYS[2]  index zset (member = draft id, score = created ms)
 * ARGV[1]  draft id   ARGV[2] created ms   ARGV[3..] field/value pairs
 * Returns  {1}        created
 *          {0, hash}  the draft already existed (left as it was): its fields
 */
const CREATE = new RedisScript(`${CREATE_LUA}
if redis.call('EXISTS', KEYS[1]) == 1 then return {0, redis.call('HGETALL', KEYS[1])} end
create_draft(KEYS[1], KEYS[2], ARGV[1], tonumber(ARGV[2]), 3, #ARGV)
return {1}
`);

/**
 * KEYS[1]  draft hash
 * ARGV[1]  token: who asks (a job id). The same token finding its own transition done resumes.
 * ARGV[2]  allowed from-states, comma-separated
 * ARGV[3]  required generation, or '' for any
 * ARGV[4]  new state
 * ARGV[5]  '1': answer with the draft's fields as they are afterwards
 * ARGV[6..] field/value pairs set with the transition
 * Returns  {1, from, hash?}   applied
 *          {2, state, hash?}  already applied by this token (a retry after a crash): resume its effects
 *          {0, state, hash?}  refused: the draft is in `state` ('' when there is no such draft)
 */
const TRANSITION = new RedisScript(`
local state = redis.call('HGET', KEYS[1], 'state')
if not state then return {0, ''} end
local code = 0
if state == ARGV[4] and redis.call('HGET', KEYS[1], 'last_token') == ARGV[1] then
  code = 2
else
  local ok = false
  for s in string.gmatch(ARGV[2], '[^,]+') do
    if s == state then ok = true end
  end
  if ok and ARGV[3] ~= '' and redis.call('HGET', KEYS[1], 'generation') ~= ARGV[3] then ok = false end
  if ok then
    code = 1
    redis.call('HSET', KEYS[1], 'state', ARGV[4], 'last_token', ARGV[1])
    if #ARGV >= 7 then redis.call('HSET', KEYS[1], unpack(ARGV, 6)) end
  end
end
if ARGV[5] == '1' then return {code, state, redis.call('HGETALL', KEYS[1])} end
return {code, state}
`);

export type TransitionOutcome = {
  readonly outcome: "applied" | "resumed" | "refused";
  readonly state: DraftState | null;
  /** With `read`: the draft as it is after the transition (or the refusal), and its effects. */
  readonly draft?: StoredDraft | null;
};

/** A draft as read, with the effects already done for it. */
export interface StoredDraft {
  readonly draft: Draft;
  readonly effects: EffectLog;
}

export interface TransitionRequest {
  readonly token: string;
  readonly from: readonly DraftState[];
  readonly to: DraftState;
  readonly generation?: number;
  readonly set?: Readonly<Record<string, string | number | null>>;
  /** Answer with the draft as it is afterwards (same round trip). */
  readonly read?: boolean;
}

/** Decided drafts are kept this long for `drafts list` and late reactions; then they go. */
export const DECIDED_RETENTION_S = 30 * 86400;
/** Telegram keeps retrying one update for about a day; its id is remembered well beyond that. */
export const UPDATE_DEDUP_S = 7 * 86400;
const MESSAGE_MAP_S = 90 * 86400;
const NOTICES_KEPT = 200;

const nullable = (v: string | undefined): string | null => (v === undefined || v === "" ? null : v);

export class DraftStore {
  private readonly base: string;

  constructor(
    private readonly redis: RedisClient,
    prefix: string,
  ) {
    this.base = `${prefix}:margot`;
  }

  key(id: string): string {
    return `${this.base}:draft:${id}`;
  }

  get indexKey(): string {
    return `${this.base}:drafts`;
  }

  get noticesKey(): string {
    return `${this.base}:notices`;
  }

  /** Creates the draft in state `pending`, or finds the one with this id (left as it was): one round trip. */
  async create(draft: NewDraft): Promise<StoredDraft> {
    const key = this.key(draft.id);
    const fields = newDraftFields(draft);
    const [code, flat] = (await CREATE.run(this.redis, [key, this.indexKey], [draft.id, String(Date.parse(draft.created_at)), ...fields])) as [
      number,
      string[] | undefined,
    ];
    if (code === 1) return this.created(draft.id, fields);
    return this.stored(key, hashFromReply(flat))!;
  }

  /** A draft just created from these fields (newDraftFields), as stored: no effects done yet. */
  created(id: string, fields: readonly string[], changes: Readonly<Record<string, string>> = {}): StoredDraft {
    return { draft: parseDraft({ ...hashFromReply(fields), ...changes }), effects: EffectLog.fresh(this.redis, this.key(id)) };
  }

  async get(id: string): Promise<Draft | null> {
    return (await this.read(id))?.draft ?? null;
  }

  /** The draft and its effects (one HGETALL). */
  async read(id: string): Promise<StoredDraft | null> {
    const key = this.key(id);
    return this.stored(key, await this.redis.hgetall(key));
  }

  /** `read` for a draft that must exist (the caller just saw it). */
  async mustRead(id: string): Promise<StoredDraft> {
    const stored = await this.read(id);
    if (!stored) throw new Error(`draft ${id} vanished`);
    return stored;
  }

  async transition(id: string, req: TransitionRequest): Promise<TransitionOutcome> {
    const set = req.set ? serialise(req.set) : [];
    const key = this.key(id);
    const [code, state, flat] = (await TRANSITION.run(
      this.redis,
      [key],
      [req.token, req.from.join(","), req.generation === undefined ? "" : String(req.generation), req.to, req.read ? "1" : "0", ...set],
    )) as [number, string, string[] | undefined];
    const outcome = code === 1 ? "applied" : code === 2 ? "resumed" : "refused";
    const parsed = DraftState.safeParse(code === 1 ? req.to : state);
    const result = { outcome, state: parsed.success ? parsed.data : null } as const;
    if (!req.read) return result;
    return { ...result, draft: this.stored(key, hashFromReply(flat)) };
  }

  /** A draft's hash as read (a script's HGETALL or ours) with its effects; null when there is no such draft. */
  private stored(key: string, hash: Record<string, string>): StoredDraft | null {
    return hash.state === undefined ? null : { draft: parseDraft(hash), effects: EffectLog.fromHash(this.redis, key, hash) };
  }

  /** Fields that are not the state (Linear ids, message refs); never a state change. */
  async update(id: string, fields: Readonly<Record<string, string | number | null | readonly unknown[]>>): Promise<void> {
    await this.redis.hset(this.key(id), ...serialise(fields));
  }

  /** The draft's marker nonce: its own, or `fresh` stored now when it has none (a draft made before nonces); one round trip. */
  async markerNonce(id: string, fresh: string): Promise<string> {
    const key = this.key(id);
    const [, [, nonce]] = (await this.redis.multi().hsetnx(key, "marker_nonce", fresh).hget(key, "marker_nonce").exec()) as [unknown, [unknown, string]];
    return nonce;
  }

  /** Decided drafts age out after DECIDED_RETENTION_S. */
  async retire(id: string): Promise<void> {
    await this.redis.expire(this.key(id), DECIDED_RETENTION_S);
  }

  /** Runs `fn` while holding a short lease on (draft, name); `held` when another holder has it. */
  async withLease<T>(id: string, name: string, ttlMs: number, fn: () => Promise<T>): Promise<{ held: false; value: T } | { held: true }> {
    const key = `${this.key(id)}:lease:${name}`;
    const token = `${process.pid}-${Math.random().toString(36).slice(2)}`;
    if ((await this.redis.set(key, token, "PX", ttlMs, "NX")) !== "OK") return { held: true };
    try {
      return { held: false, value: await fn() };
    } finally {
      await this.redis.eval(`if redis.call('GET', KEYS[1]) == ARGV[1] then return redis.call('DEL', KEYS[1]) end return 0`, 1, key, token).catch(() => {});
    }
  }

  async mapMessage(ref: MessageRef, draftId: string): Promise<void> {
    if (ref.chat_id === null || ref.message_id === null) return;
    await this.redis.set(`${this.base}:message:${ref.chat_id}:${ref.message_id}`, draftId, "EX", MESSAGE_MAP_S);
  }

  byMessage(chatId: string, messageId: number): Promise<string | null> {
    return this.redis.get(`${this.base}:message:${chatId}:${messageId}`);
  }

  /** First delivery of a Telegram update wins; the id is remembered longer than finished jobs are kept. */
  async claimUpdate(updateId: number): Promise<boolean> {
    return (await this.redis.set(`${this.base}:tg-update:${updateId}`, String(Date.now()), "EX", UPDATE_DEDUP_S, "NX")) === "OK";
  }

  async releaseUpdate(updateId: number): Promise<void> {
    await this.redis.del(`${this.base}:tg-update:${updateId}`);
  }

  async addNotice(text: string, at = new Date()): Promise<void> {
    await this.redis.multi().lpush(this.noticesKey, JSON.stringify({ at: at.toISOString(), text })).ltrim(this.noticesKey, 0, NOTICES_KEPT - 1).exec();
  }

  async notices(limit = 20): Promise<Array<{ at: string; text: string }>> {
    const raw = await this.redis.lrange(this.noticesKey, 0, limit - 1);
    return raw.flatMap((line) => {
      try {
        return [JSON.parse(line) as { at: string; text: string }];
      } catch {
        return [];
      }
    });
  }

  /** Newest first; drafts that aged out are dropped from the index on the way. */
  async list(limit = 100): Promise<Draft[]> {
    const ids = await this.redis.zrevrange(this.indexKey, 0, limit - 1);
    if (ids.length === 0) return [];
    const pipeline = this.redis.pipeline();
    for (const id of ids) pipeline.hgetall(this.key(id));
    const results = (await pipeline.exec()) ?? [];
    const drafts: Draft[] = [];
    const gone: string[] = [];
    results.forEach(([err, raw], i) => {
      const record = raw as Record<string, string> | null;
      if (err || !record || record.state === undefined) gone.push(ids[i]!);
      else drafts.push(parseDraft(record));
    });
    if (gone.length > 0) await this.redis.zrem(this.indexKey, ...gone);
    return drafts;
  }
}

/** A new draft's fields as stored: state `pending`, generation 0, no messages yet. */
export function newDraftFields(draft: NewDraft): string[] {
  return serialise({ ...draft, state: "pending", generation: 0, messages: [], labels_applied: [] });
}

function serialise(fields: Readonly<Record<string, unknown>>): string[] {
  const out: string[] = [];
  for (const [k, v] of Object.entries(fields)) {
    if (v === undefined) continue;
    out.push(k, v === null ? "" : typeof v === "object" ? JSON.stringify(v) : String(v));
  }
  return out;
}

function json<T>(value: string | undefined, fallback: T): T {
  if (value === undefined || value === "") return fallback;
  try {
    return JSON.parse(value) as T;
  } catch {
    return fallback;
  }
}

function parseDraft(raw: Record<string, string>): Draft {
  const state = DraftState.safeParse(raw.state);
  const number = (v: string | undefined) => (v === undefined || v === "" ? null : Number(v));
  return {
    id: raw.id ?? "",
    interaction_id: raw.interaction_id ?? "",
    state: state.success ? state.data : "pending",
    title: raw.title ?? "",
    body: raw.body ?? "",
    ticket: json(raw.ticket, {} as TicketInput),
    target_repo: nullable(raw.target_repo),
    project: nullable(raw.project),
    classification: (raw.classification ?? "action_shaped") as Classification,
    confidence: Number(raw.confidence ?? 0),
    channel: raw.channel === "telegram" ? "telegram" : "local",
    generation: Number(raw.generation ?? 0),
    messages: json<MessageRef[]>(raw.messages, []),
    created_at: raw.created_at ?? "",
    queued_at: nullable(raw.queued_at),
    release_at: nullable(raw.release_at),
    draft_number: number(raw.draft_number),
    posted_at: nullable(raw.posted_at),
    expires_at: nullable(raw.expires_at),
    deferred_at: nullable(raw.deferred_at),
    resurface_at: nullable(raw.resurface_at),
    decided_at: nullable(raw.decided_at),
    decided_by: nullable(raw.decided_by),
    reject_reason: nullable(raw.reject_reason),
    linear_issue_id: nullable(raw.linear_issue_id),
    linear_issue_identifier: nullable(raw.linear_issue_identifier),
    linear_issue_url: nullable(raw.linear_issue_url),
    labels_applied: json<string[]>(raw.labels_applied, []),
    marker_nonce: nullable(raw.marker_nonce),
  };
}
