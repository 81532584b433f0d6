// A decision to draft, claimed in one round trip (ADR 0025): the interaction claimed, its draft
// created, counted against the rate limit, the kill switch read, and — when the draft may go out — moved
// to `posting` for this job, all in one script. Only a first claim takes this path: a retry (the claim
// already this job's) resumes through the separate steps, which find what the script left.
import { KILL_SWITCH_ON_LUA, storedIsOn } from "../../control/kill-switch.js";
import { RedisScript } from "../../redis/script.js";
import type { BridgeDeps } from "./bridge-deps.js";
import { NOTICE_MARK, type HoldState } from "./draft-posting.js";
import { CREATE_LUA, newDraftFields, type NewDraft, type StoredDraft } from "../store/drafts.js";
import { CLAIM_LUA, type ClaimOptions, type ClaimOutcome, type ClaimReply, type IntentRecord } from "../store/intents.js";
import { ACQUIRE_LUA, rateDecision, type RateDecision } from "../store/rate-limit.js";

/**
 * KEYS[1] intent hash  KEYS[2] suppression  KEYS[3] draft hash  KEYS[4] drafts index
 * KEYS[5] rate posted  KEYS[6] rate waiting  KEYS[7] kill switch  KEYS[8] kill-switch notice mark
 * ARGV[1] job  ARGV[2] suppression decided under  ARGV[3] ttl (s)  ARGV[4] m: how many record items follow
 * ARGV[5 .. 4+m] the record's field/value pairs, then from d = 5+m: draft id, created ms, max, window ms,
 * now ms, '1' when the kill-switch file is present, the job's token, the draft's field/value pairs
 * Returns  claim_intent's reply when the claim is not this job's first, else
 *          {1, acquire_slot's reply, the kill switch's value or '', notice mark 0|1, moved to posting 0|1}
 */
const DRAFT_CLAIM = new RedisScript(`${CLAIM_LUA}${CREATE_LUA}${ACQUIRE_LUA}${KILL_SWITCH_ON_LUA}
local m = tonumber(ARGV[4])
local claimed = claim_intent(KEYS[1], KEYS[2], ARGV[1], ARGV[2], tonumber(ARGV[3]), 5, 4 + m)
if claimed[1] ~= 1 then return claimed end
local d = 5 + m
local id = ARGV[d]
create_draft(KEYS[3], KEYS[4], id, tonumber(ARGV[d + 1]), d + 7, #ARGV)
local rate = acquire_slot(KEYS[5], KEYS[6], id, tonumber(ARGV[d + 2]), tonumber(ARGV[d + 3]), tonumber(ARGV[d + 4]))
local switch = redis.call('GET', KEYS[7])
local noticed = redis.call('EXISTS', KEYS[8])
local posting = 0
if rate[1] == 1 and ARGV[d + 5] == '0' and not kill_switch_on(switch) then
  redis.call('HSET', KEYS[3], 'state', 'posting', 'last_token', ARGV[d + 6])
  posting = 1
end
return {1, rate, switch or '', noticed, posting}
`);

/** What a first claim of a draft decision found and did, beside the claim. */
export interface FreshDraft {
  /** The draft as stored: `pending`, or `posting` when `begun`. */
  readonly stored: StoredDraft;
  /** null: not counted, the draft was no longer pending (a retry after it was counted and moved on). */
  readonly decision: RateDecision | null;
  readonly hold: HoldState;
  /** Counted, and the kill switch off: the draft went pending → posting for this job. */
  readonly begun: boolean;
}

export interface DraftClaimResult {
  readonly claim: ClaimOutcome;
  /** Set when this was the interaction's first claim; null for a retry, a duplicate, a suppression. */
  readonly fresh: FreshDraft | null;
}

export class DraftClaim {
  constructor(private readonly deps: Pick<BridgeDeps, "intents" | "drafts" | "rateLimit" | "killSwitch">) {}

  async claim(record: IntentRecord, draft: NewDraft, opts: ClaimOptions, token: string, now: number): Promise<DraftClaimResult> {
    const { intents, drafts, rateLimit, killSwitch } = this.deps;
    const fileHeld = killSwitch.fileActive();
    const [job, under, ttl, ...fields] = intents.claimArgs(record, opts);
    const draftFields = newDraftFields(draft);
    const keys = [
      ...intents.claimKeys(record),
      drafts.key(draft.id),
      drafts.indexKey,
      rateLimit.postedKey,
      rateLimit.waitingKey,
      killSwitch.key,
      intents.markKey(NOTICE_MARK),
    ];
    const draftArgs = [
      draft.id,
      String(Date.parse(draft.created_at)),
      String(rateLimit.max),
      String(rateLimit.windowMs),
      String(now),
      fileHeld ? "1" : "0",
      token,
    ];
    const reply = (await DRAFT_CLAIM.run(intents.redis, keys, [
      job!,
      under!,
      ttl!,
      String(fields.length),
      ...fields,
      ...draftArgs,
      ...draftFields,
    ])) as unknown[];
    if (reply[0] !== 1) return { claim: intents.claimOutcome(record, reply as ClaimReply), fresh: null };
    const [, rate, switchValue, noticed, posting] = reply as [1, number[], string, number, number];
    const begun = posting === 1;
    return {
      claim: intents.claimOutcome(record, [1]),
      fresh: {
        stored: drafts.created(draft.id, draftFields, begun ? { state: "posting", last_token: token } : {}),
        decision: rateDecision(rate),
        hold: { active: fileHeld || storedIsOn(switchValue === "" ? null : switchValue), noticed: noticed === 1 },
        begun,
      },
    };
  }
}
