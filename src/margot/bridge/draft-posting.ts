// Sending a draft to the review channel, shared by both flows (a new draft from a completion; a queued,
// held or deferred one from a timer): pending/queued/deferred → posting → posted, then its expiry clock
// and drafted rows. `posting` is written before the send and `posted` right after, so a retry that finds
// `posting` knows the send may have happened (ADR 0004). Also what else reaches the channel: notices,
// and whether the kill switch holds Margot's outbound effects.
import type { MessageRef } from "../../review/review-channel.js";
import { iso, type BridgeDeps } from "./bridge-deps.js";
import type { Draft, DraftState, StoredDraft } from "../store/drafts.js";
import type { OutboundText } from "./outbound.js";

export interface PostRequest {
  readonly from: DraftState[];
  /** The draft went to `posting` for this job already (in its claim's round trip, draft-claim.ts). */
  readonly begun?: boolean;
  readonly kind: "new" | "resurfaced";
  /** Its number in the rate-limit window, when it was just counted. */
  readonly number: number | null;
  /** Resurfacing: only from this generation's deferral. */
  readonly generation?: number;
}

/** The kill switch as Margot sees it, read without side effects (so it can go out beside other reads). */
export interface HoldState {
  readonly active: boolean;
  /** The channel was told of this episode already. */
  readonly noticed: boolean;
}

/** The intent store's mark: the channel was told of this kill-switch episode. */
export const NOTICE_MARK = "kill-switch-notice";

export class DraftPoster {
  constructor(
    private readonly deps: BridgeDeps,
    readonly text: OutboundText,
    private readonly now: () => number,
  ) {}

  get holdRecheckMs(): number {
    return this.deps.settings.holdRecheckMs ?? 5000;
  }

  /** Sends a draft; false when it was not in a state to be sent by this job (then nothing was sent). */
  async post({ draft, effects }: StoredDraft, token: string, how: PostRequest): Promise<boolean> {
    const { drafts, channel } = this.deps;
    const id = draft.id;
    const begin = how.begun
      ? ({ outcome: "applied", state: "posting" } as const)
      : await drafts.transition(id, { token, from: how.from, to: "posting", ...(how.generation !== undefined ? { generation: how.generation } : {}) });
    if (begin.outcome === "refused") {
      if (begin.state === "posted") await this.afterPost(await drafts.mustRead(id));
      return false;
    }
    // resumed: an earlier attempt of this job began sending and died before recording the
    // message; it may or may not have arrived. Send again, saying so (ADR 0004).
    const generation = how.kind === "resurfaced" ? draft.generation + 1 : draft.generation;
    const expiresAt = this.now() + this.deps.settings.expiryMs;
    const kind = begin.outcome === "resumed" && how.kind === "new" ? "resent" : how.kind;
    // The body was made of redacted parts when the draft was (completion-flow.ts): it is sent as it is.
    const ref = await channel.postDraft({ draft_id: id, title: draft.title, body: draft.body, kind, expires_at: iso(expiresAt) });
    const messages = [...draft.messages, ref];
    const changes = { posted_at: iso(this.now()), expires_at: iso(expiresAt), generation, resurface_at: null, draft_number: how.number ?? draft.draft_number };
    // The message is out: `posted`, its expiry clock and the drafted rows all say so, and go together (a retry
    // before `posted` is recorded resends, labelled, and repeats at most those rows).
    const steps = await Promise.allSettled([
      drafts.mapMessage(ref, id),
      drafts.transition(id, { token, from: ["posting"], to: "posted", set: { ...changes, messages: JSON.stringify(messages) } }),
      this.afterPost({ draft: { ...draft, ...changes, state: "posted", messages }, effects }),
    ]);
    for (const step of steps) if (step.status === "rejected") throw step.reason;
    return true;
  }

  /** After a draft is in the channel: its expiry timer, and (first post only) the drafted rows. */
  async afterPost({ draft, effects }: StoredDraft): Promise<void> {
    const { timers, ledger, audit, channel } = this.deps;
    const steps = await Promise.allSettled([
      draft.expires_at ? timers.scheduleExpire(draft.id, draft.generation, Date.parse(draft.expires_at)) : Promise.resolve(),
      effects.run([
        [
          "ledger:drafted",
          () =>
            ledger.append({
              interaction_id: draft.interaction_id,
              classification: draft.classification,
              confidence: draft.confidence,
              outcome: "drafted",
              draft_id: draft.id,
            }),
        ],
        [
          "audit:drafted",
          () =>
            audit.emit({
              type: "margot_intent_drafted",
              interaction_id: draft.interaction_id,
              draft_id: draft.id,
              target_repo: draft.target_repo,
              channel: channel.kind,
            }),
        ],
      ]),
    ]);
    for (const step of steps) if (step.status === "rejected") throw step.reason;
  }

  async notice(text: string, replyTo?: MessageRef): Promise<void> {
    const clean = this.text.text(text);
    await this.deps.drafts.addNotice(clean, new Date(this.now()));
    await this.deps.channel.postNotice(clean, replyTo);
  }

  async holdState(): Promise<HoldState> {
    const [active, noticed] = await Promise.all([this.deps.killSwitch.isActive(), this.deps.intents.hasMark(NOTICE_MARK)]);
    return { active, noticed };
  }

  /** Whether the kill switch holds Margot's outbound effects now; the channel hears of it once per episode. */
  async held(state?: HoldState): Promise<boolean> {
    const { intents, channel, drafts } = this.deps;
    const { active, noticed } = state ?? (await this.holdState());
    if (active) {
      if (!noticed && (await intents.markOnce(NOTICE_MARK))) {
        const text = "the kill switch is on: new drafts and approvals wait; nothing is posted and no Linear issue is created until it goes off";
        await drafts.addNotice(text, new Date(this.now()));
        await channel.postNotice(text);
      }
      return true;
    }
    if (noticed) await intents.clearMark(NOTICE_MARK);
    return false;
  }
}
