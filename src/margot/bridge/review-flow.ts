// The second of the bridge's two flows: a reaction (👍 👎 ⏰) or a timer (expiry, resurface, the rate
// limit's release, a kill-switch hold) → the draft's next state → a Linear issue on approval. Every
// change of state is one transition script, so two deciders racing cannot both win; effects are done
// once per draft (ADR 0004).
import type { MargotActionAccepted } from "../contract.js";
import { MARGOT_LABELS, newMarkerNonce } from "../../linear/issues.js";
import type { Reaction } from "../../review/reactions.js";
import { BridgeError } from "../../errors.js";
import { iso, type BridgeDeps } from "./bridge-deps.js";
import type { DraftPoster } from "./draft-posting.js";
import { DECIDED_STATES, REACTABLE_STATES, type Draft, type StoredDraft } from "../store/drafts.js";
import { approvalRecord } from "../ticket.js";

export interface ReactionRequest {
  readonly draft_id: string;
  readonly reaction: Reaction;
  readonly reason: string | null;
  /** Who reacted: telegram:<user id>, cli:<user>@<host>. */
  readonly actor: string;
  /** The reaction job's id: a retry of the same reaction resumes instead of being refused. */
  readonly token: string;
  /** Where the reaction was given: an approval from a channel that did not show the whole draft is refused. */
  readonly source: "telegram" | "cli";
}

export interface ReactionResult {
  readonly draft_id: string;
  readonly reaction: Reaction;
  /** false: the draft was already decided (or not reactable); nothing changed. */
  readonly changed: boolean;
  readonly state: Draft["state"] | null;
  readonly message: string;
  readonly accepted: MargotActionAccepted | null;
}

export interface TimerResult {
  readonly draft_id: string;
  readonly changed: boolean;
  readonly state: Draft["state"] | null;
  /** rate-limit-release only: the draft must wait longer, until then (ms). */
  readonly retry_at?: number;
}

/** Someone else is creating this draft's Linear issue right now; retry later. */
export class IssueInProgress extends Error {
  readonly retryable = true;
  constructor(draftId: string) {
    super(`the Linear issue for draft ${draftId} is being created by another job`);
    this.name = "IssueInProgress";
  }
}

/** Longer than a create with all its retries; a dead holder's lease lapses on its own. */
const LINEAR_LEASE_MS = 5 * 60_000;

export class ReviewFlow {
  constructor(
    private readonly deps: BridgeDeps,
    private readonly poster: DraftPoster,
    private readonly now: () => number,
  ) {}

  async react(req: ReactionRequest): Promise<ReactionResult> {
    const { drafts } = this.deps;
    const draft = await drafts.get(req.draft_id);
    const unchanged = (state: Draft["state"] | null, message: string): ReactionResult => ({
      draft_id: req.draft_id,
      reaction: req.reaction,
      changed: false,
      state,
      message,
      accepted: null,
    });
    if (!draft) return unchanged(null, `no draft ${req.draft_id}; nothing changed`);
    // One instant for the reaction: a deferral resurfaces exactly MARGOT_DEFER_SECONDS after `deferred_at`.
    const at = this.now();
    const now = iso(at);
    const decided = { decided_at: now, decided_by: req.actor };

    if (req.reaction === "approve") {
      const shown = draft.messages.at(-1);
      if (req.source === "telegram" && shown?.shown_whole === false) {
        // The reviewer saw part of the text: what reaches Linear must be what was approved (ADR 0040).
        const message =
          `draft ${draft.id} is too long to be shown whole in Telegram, so it cannot be approved there: ` +
          `read it with \`sandcastle-queue drafts show ${draft.id}\`, then approve with \`sandcastle-queue drafts react ${draft.id} approve\`. Your approve changed nothing`;
        await this.poster.notice(message, shown);
        return unchanged(draft.state, message);
      }
      const t = await drafts.transition(draft.id, { token: req.token, from: REACTABLE_STATES, to: "approved", set: decided, read: true });
      const current = t.draft ?? (await drafts.mustRead(draft.id));
      if ((t.outcome !== "refused" || (t.state === "approved" && current.draft.linear_issue_id === null)) && (await this.poster.held())) {
        await this.deps.timers.cancelExpire(current.draft.id, current.draft.generation);
        await this.deps.timers.scheduleHold(current.draft.id, this.now() + this.poster.holdRecheckMs);
        const message = `draft ${draft.id} approved; the kill switch is on, so its Linear issue is created when it goes off`;
        return { draft_id: draft.id, reaction: "approve", changed: t.outcome !== "refused", state: "approved", message, accepted: null };
      }
      if (t.outcome !== "refused") {
        const accepted = await this.accept(current);
        return {
          draft_id: draft.id,
          reaction: "approve",
          changed: true,
          state: "approved",
          message: `draft ${draft.id} approved → Linear ${accepted.linear_issue_identifier}`,
          accepted,
        };
      }
      if (t.state === "approved" && current.draft.linear_issue_id === null) {
        // Approved earlier but the issue was never created (Linear was down, the key missing): finish it now.
        try {
          const accepted = await this.accept(current);
          return {
            draft_id: draft.id,
            reaction: "approve",
            changed: true,
            state: "approved",
            message: `draft ${draft.id} was approved; its missing Linear issue is now ${accepted.linear_issue_identifier}`,
            accepted,
          };
        } catch (err) {
          if (!(err instanceof IssueInProgress)) throw err;
          return {
            draft_id: draft.id,
            reaction: "approve",
            changed: false,
            state: "approved",
            message: `draft ${draft.id} is already approved; its Linear issue is being created now. Nothing changed`,
            accepted: null,
          };
        }
      }
      return this.refused(current.draft, req, t.state);
    }
    if (req.reaction === "reject") {
      const reason = req.reason ? this.poster.text.text(req.reason).slice(0, 500) : null;
      const t = await drafts.transition(draft.id, {
        token: req.token,
        from: REACTABLE_STATES,
        to: "rejected",
        set: { ...decided, reject_reason: reason },
        read: true,
      });
      const current = t.draft ?? (await drafts.mustRead(draft.id));
      if (t.outcome === "refused") return this.refused(current.draft, req, t.state);
      await this.rejected(current);
      return {
        draft_id: draft.id,
        reaction: "reject",
        changed: t.outcome === "applied",
        state: "rejected",
        message: `draft ${draft.id} rejected${reason ? `: ${reason}` : ""}; no Linear issue`,
        accepted: null,
      };
    }
    const resurfaceAt = at + this.deps.settings.deferMs;
    const t = await drafts.transition(draft.id, {
      token: req.token,
      from: ["posted"],
      to: "deferred",
      set: { deferred_at: now, resurface_at: iso(resurfaceAt) },
      read: true,
    });
    const current = t.draft ?? (await drafts.mustRead(draft.id));
    if (t.outcome === "refused") return this.refused(current.draft, req, t.state);
    const deferred = current.draft;
    await this.deps.timers.cancelExpire(deferred.id, deferred.generation);
    await this.deps.timers.scheduleResurface(deferred.id, deferred.generation, Date.parse(deferred.resurface_at ?? iso(resurfaceAt)));
    await current.effects.once(`notice:deferred:${deferred.generation}`, () =>
      this.poster.notice(`draft ${deferred.id} deferred; it comes back at ${deferred.resurface_at}`, deferred.messages.at(-1)),
    );
    return {
      draft_id: draft.id,
      reaction: "defer",
      changed: true,
      state: "deferred",
      message: `draft ${draft.id} deferred until ${deferred.resurface_at}`,
      accepted: null,
    };
  }

  private async refused(current: Draft, req: ReactionRequest, state: Draft["state"] | null): Promise<ReactionResult> {
    const why =
      state === null
        ? "is gone"
        : DECIDED_STATES.includes(state)
          ? `is already ${state}${current.decided_by ? ` (by ${current.decided_by} at ${current.decided_at})` : ""}`
          : state === "deferred"
            ? `is already deferred until ${current.resurface_at}`
            : state === "queued"
              ? `is not posted yet (queued by the rate limit until ${current.release_at})`
              : `is not posted yet (${state})`;
    const message = `draft ${current.id} ${why}; your ${req.reaction} changed nothing`;
    await this.poster.notice(message, current.messages.at(-1));
    return { draft_id: current.id, reaction: req.reaction, changed: false, state, message, accepted: null };
  }

  private async accept({ draft, effects }: StoredDraft): Promise<MargotActionAccepted> {
    const { drafts, audit, ledger, timers } = this.deps;
    if (!this.deps.issues) {
      throw new BridgeError(
        `LINEAR_API_KEY is not set: draft ${draft.id} is approved but no Linear issue can be created; set it (or LINEAR_LOCAL_FILE, the local mode) and approve again`,
      );
    }
    await timers.cancelExpire(draft.id, draft.generation);
    let issue = draft.linear_issue_id
      ? {
          id: draft.linear_issue_id,
          identifier: draft.linear_issue_identifier ?? draft.linear_issue_id,
          url: draft.linear_issue_url,
          labels: draft.labels_applied,
        }
      : null;
    if (!issue) {
      const tracker = this.deps.issues;
      // The text the reviewer was shown, unchanged (it was redacted when it was made), then the approval's record.
      const description = `${draft.body.trimEnd()}\n\n${approvalRecord({ via: draft.channel, draftId: draft.id, ts: draft.decided_at ?? iso(this.now()) })}`;
      const markerNonce = draft.marker_nonce ?? (await drafts.markerNonce(draft.id, newMarkerNonce()));
      // One creator at a time per draft: two approvals racing must not both miss the marker and both create.
      const leased = await drafts.withLease(draft.id, "linear", LINEAR_LEASE_MS, async () => {
        const again = (await drafts.mustRead(draft.id)).draft;
        if (again.linear_issue_id)
          return {
            id: again.linear_issue_id,
            identifier: again.linear_issue_identifier ?? again.linear_issue_id,
            url: again.linear_issue_url,
            labels: again.labels_applied,
          };
        const created = (
          await tracker.createOnce({ interactionId: draft.interaction_id, markerNonce, title: draft.title, description, projectName: draft.project })
        ).issue;
        await drafts.update(draft.id, {
          linear_issue_id: created.id,
          linear_issue_identifier: created.identifier,
          linear_issue_url: created.url,
          labels_applied: JSON.stringify(created.labels.length > 0 ? created.labels : [...MARGOT_LABELS]),
        });
        return created;
      });
      if (leased.held) throw new IssueInProgress(draft.id);
      issue = leased.value;
    }
    const accepted: MargotActionAccepted = {
      interaction_id: draft.interaction_id,
      draft_id: draft.id,
      linear_issue_id: issue.id,
      linear_issue_identifier: issue.identifier,
      labels_applied: [...(issue.labels.length > 0 ? issue.labels : MARGOT_LABELS)],
    };
    const { identifier, url } = issue;
    await effects.run([
      ["audit:accepted", () => audit.emit({ type: "margot_intent_accepted", ...accepted })],
      [
        "ledger:accepted",
        () =>
          ledger.append({
            interaction_id: draft.interaction_id,
            classification: draft.classification,
            confidence: draft.confidence,
            outcome: "accepted",
            draft_id: draft.id,
            linear_issue_id: accepted.linear_issue_id,
          }),
      ],
      ["notice:accepted", () => this.poster.notice(`draft ${draft.id} approved → Linear ${identifier}${url ? ` ${url}` : ""}`, draft.messages.at(-1))],
    ]);
    await drafts.retire(draft.id);
    return accepted;
  }

  private async rejected({ draft, effects }: StoredDraft): Promise<void> {
    const { drafts, audit, ledger, timers, intents } = this.deps;
    await timers.cancelExpire(draft.id, draft.generation);
    const until = this.now() + this.deps.settings.suppressMs;
    await intents.suppress(draft.interaction_id, until, this.now());
    await effects.run([
      [
        "audit:rejected",
        () =>
          audit.emit({
            type: "margot_intent_rejected",
            interaction_id: draft.interaction_id,
            draft_id: draft.id,
            reason: draft.reject_reason ?? "founder_rejected",
            rejected_by: "founder",
          }),
      ],
      [
        "ledger:rejected",
        () =>
          ledger.append({
            interaction_id: draft.interaction_id,
            classification: draft.classification,
            confidence: draft.confidence,
            outcome: "rejected",
            draft_id: draft.id,
            reason: "founder_rejected",
          }),
      ],
      [
        "notice:rejected",
        () =>
          this.poster.notice(
            `draft ${draft.id} rejected; no Linear issue. Interaction ${draft.interaction_id} is suppressed until ${iso(until)}`,
            draft.messages.at(-1),
          ),
      ],
    ]);
    await drafts.retire(draft.id);
  }

  /** draft-expire: no reaction within the expiry → expired (only the clock of the current generation counts). */
  async expire(draftId: string, generation: number, token: string): Promise<TimerResult> {
    const { drafts, audit, ledger } = this.deps;
    const t = await drafts.transition(draftId, {
      token,
      from: ["posted"],
      generation,
      to: "expired",
      set: { decided_at: iso(this.now()), decided_by: "timer" },
      read: true,
    });
    if (t.outcome === "refused") return { draft_id: draftId, changed: false, state: t.state };
    const { draft, effects } = t.draft ?? (await drafts.mustRead(draftId));
    await effects.run([
      ["audit:expired", () => audit.emit({ type: "margot_intent_expired", interaction_id: draft.interaction_id, draft_id: draftId })],
      [
        "ledger:expired",
        () =>
          ledger.append({
            interaction_id: draft.interaction_id,
            classification: draft.classification,
            confidence: draft.confidence,
            outcome: "expired",
            draft_id: draftId,
          }),
      ],
      ["notice:expired", () => this.poster.notice(`draft ${draftId} expired: no reaction by ${draft.expires_at}; nothing was created`, draft.messages.at(-1))],
    ]);
    await drafts.retire(draftId);
    return { draft_id: draftId, changed: t.outcome === "applied", state: "expired" };
  }

  /** draft-resurface: a deferred draft comes back (posted again) with a new expiry clock. */
  async resurface(draftId: string, generation: number, token: string): Promise<TimerResult> {
    const stored = await this.deps.drafts.read(draftId);
    if (!stored) return { draft_id: draftId, changed: false, state: null };
    const { draft } = stored;
    if (draft.generation !== generation && draft.state !== "posting") return { draft_id: draftId, changed: false, state: draft.state };
    if (await this.poster.held()) return { draft_id: draftId, changed: false, state: draft.state, retry_at: this.now() + this.poster.holdRecheckMs };
    const posted = await this.poster.post(stored, token, { from: ["deferred"], kind: "resurfaced", number: null, generation });
    return { draft_id: draftId, changed: posted, state: (await this.deps.drafts.mustRead(draftId)).draft.state };
  }

  /** rate-limit-release: a queued draft tries for a slot again; it posts, or learns its new time. */
  async releaseQueued(draftId: string, token: string): Promise<TimerResult> {
    const stored = await this.deps.drafts.read(draftId);
    if (!stored) return { draft_id: draftId, changed: false, state: null };
    const { draft } = stored;
    const waiting = draft.state === "queued" || draft.state === "posting" || (draft.state === "approved" && draft.linear_issue_id === null);
    if (waiting && (await this.poster.held()))
      return { draft_id: draftId, changed: false, state: draft.state, retry_at: this.now() + this.poster.holdRecheckMs };
    if (draft.state === "approved" && draft.linear_issue_id === null) {
      // An approval the kill switch held: create its Linear issue now.
      await this.accept(stored);
      return { draft_id: draftId, changed: true, state: "approved" };
    }
    if (draft.state === "queued" || draft.state === "posting") {
      const decision = await this.deps.rateLimit.acquire(draftId, this.now());
      if (!decision.granted) {
        await this.deps.drafts.update(draftId, { release_at: iso(decision.releaseAt), draft_number: decision.number });
        return { draft_id: draftId, changed: false, state: "queued", retry_at: decision.releaseAt };
      }
      const posted = await this.poster.post(stored, token, { from: ["queued"], kind: "new", number: decision.number });
      return { draft_id: draftId, changed: posted, state: (await this.deps.drafts.mustRead(draftId)).draft.state };
    }
    if (draft.state === "posted") await this.poster.afterPost(stored);
    return { draft_id: draftId, changed: false, state: draft.state };
  }
}
