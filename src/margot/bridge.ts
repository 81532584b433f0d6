// The Margot bridge: research completion → classify → rules → draft → review channel, and a
// reaction → Linear issue / rejection / defer, with the 24 h expiry and the rate limit's wait as
// timers (delayed jobs, scheduled through `DraftTimers`). Every step can be repeated: a job
// retried after a crash resumes where the last attempt stopped and repeats no effect that was
// recorded as done (ADR 0004). Dependencies come in; nothing here reads config or env.
import { randomBytes } from "node:crypto";
import type { AuditLog } from "../audit/audit-log.js";
import type { IssueTracker } from "../linear/issues.js";
import { MARGOT_LABELS } from "../linear/issues.js";
import type { Logger } from "../log.js";
import { createRedactor } from "../redact/index.js";
import { DECIDED_STATES, REACTABLE_STATES, type Draft, type DraftStore, type NewDraft } from "./drafts.js";
import type { MessageRef, ReviewChannel } from "../review/review-channel.js";
import type { Reaction } from "../review/telegram-updates.js";
import { assessInSteps } from "./assess.js";
import type { MargotActionAccepted, MargotIntentResult, MargotResearchCompletion } from "./contract.js";
import { INTENT_MEMORY_S, type IntentRecord, type IntentStore } from "./intents.js";
import { FOLLOW_UP_REQUEST_MAX, type FollowUpLog } from "./follow-ups.js";
import type { MargotLedger } from "./ledger.js";
import { redactPii, type PiiConfig } from "./pii.js";
import type { Project } from "./projects.js";
import type { DraftRateLimit } from "./rate-limit.js";
import { applyRules } from "./rules.js";
import { textSlices } from "./text-slices.js";
import { renderTicket, type TicketInput } from "./ticket.js";
import { BridgeError } from "../errors.js";

export { BridgeError };

/** When drafts' timers fire; implemented with delayed jobs by the worker. Each call is idempotent. */
export interface DraftTimers {
  scheduleExpire(draftId: string, generation: number, atMs: number): Promise<void>;
  /** Best-effort: the expire job also checks the draft's state and generation. */
  cancelExpire(draftId: string, generation: number): Promise<void>;
  scheduleResurface(draftId: string, generation: number, atMs: number): Promise<void>;
  scheduleRelease(draftId: string, atMs: number): Promise<void>;
  /** A draft or approval held by the kill switch looks again then. */
  scheduleHold(draftId: string, atMs: number): Promise<void>;
}

export interface BridgeSettings {
  readonly expiryMs: number;
  readonly deferMs: number;
  readonly suppressMs: number;
  readonly destructiveVerbs: readonly string[];
  readonly pii: PiiConfig;
  /** While the kill switch is on, held drafts and approvals look again this often (ms). */
  readonly holdRecheckMs?: number;
}

export interface BridgeDeps {
  readonly intents: IntentStore;
  readonly drafts: DraftStore;
  readonly rateLimit: DraftRateLimit;
  readonly ledger: MargotLedger;
  /** MARGOT_FOLLOW_UP_PATH: where research follow-ups go for Pi-CEO to start the new research. */
  readonly followUps: FollowUpLog;
  readonly audit: AuditLog;
  readonly channel: ReviewChannel;
  /** null when LINEAR_API_KEY is not set: an approval then fails with a message saying so. */
  readonly issues: IssueTracker | null;
  readonly timers: DraftTimers;
  /** On: nothing is posted and no Linear issue is created; drafts and approvals wait (ADR 0017). */
  readonly killSwitch: { isActive(): Promise<boolean> };
  readonly projects: () => Promise<readonly Project[]>;
  readonly settings: BridgeSettings;
  readonly log: Logger;
  readonly now?: () => number;
  readonly newDraftId?: () => string;
}

export interface ReactionRequest {
  readonly draft_id: string;
  readonly reaction: Reaction;
  readonly reason: string | null;
  /** Who reacted: telegram:<user id>, cli:<user>@<host>. */
  readonly actor: string;
  /** The reaction job's id: a retry of the same reaction resumes instead of being refused. */
  readonly token: string;
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

const iso = (ms: number) => new Date(ms).toISOString();

// One slice of CPU per step; other jobs (lock renewals among them) run in between.
const yieldToEventLoop = () => new Promise<void>((resolve) => setImmediate(resolve));

export class MargotBridge {
  private readonly now: () => number;
  private readonly newDraftId: () => string;
  private readonly secrets = createRedactor();

  constructor(private readonly deps: BridgeDeps) {
    this.now = deps.now ?? Date.now;
    this.newDraftId = deps.newDraftId ?? (() => `d-${randomBytes(6).toString("hex")}`);
  }

  /** PII (standard strictness) and secret shapes out of anything that leaves the process. */
  outbound(text: string): string {
    return redactPii(this.secrets.text(text), this.deps.settings.pii).text;
  }

  /** `outbound` for texts that scale with the research body: slice by slice, pausing between slices. */
  private async outboundInSlices(text: string): Promise<string> {
    const slices = textSlices(text);
    if (slices.length === 1) return this.outbound(text);
    const out: string[] = [];
    for (const slice of slices) {
      out.push(this.outbound(slice));
      await yieldToEventLoop();
    }
    return out.join("");
  }

  // ------------------------------------------------------------ research completions

  /** One research completion. `jobKey` identifies the job (id + creation time), stable across its retries. */
  async processCompletion(completion: MargotResearchCompletion, jobKey: string): Promise<MargotIntentResult> {
    const { intents } = this.deps;
    const id = completion.interaction_id;
    // Both reads go out together: one round trip instead of two.
    const [existing, suppressedUntil] = await Promise.all([intents.get(id), intents.suppressedUntil(id)]);
    if (existing?.job === jobKey) return this.carryOut(existing, jobKey);
    if (existing && suppressedUntil === null) return this.duplicateOf(existing);

    const record = await this.decide(completion, jobKey, suppressedUntil);
    const ttlS = suppressedUntil !== null ? (suppressedUntil.getTime() - this.now()) / 1000 : INTENT_MEMORY_S;
    const claim = await intents.claim(record, { replace: suppressedUntil !== null, ttlS });
    if (claim === "taken") {
      const owner = await intents.get(id);
      if (owner) return this.duplicateOf(owner);
    }
    return this.carryOut((await intents.get(id)) ?? record, jobKey);
  }

  private async decide(completion: MargotResearchCompletion, jobKey: string, suppressedUntil: Date | null): Promise<IntentRecord> {
    const { settings } = this.deps;
    const projects = await this.deps.projects();
    const { classification, action, destructiveVerbs, followUpSentences } = await assessInSteps(
      completion.body,
      { projects, destructiveVerbs: settings.destructiveVerbs, interactionId: completion.interaction_id },
      yieldToEventLoop,
    );
    const outcome = applyRules({
      classification,
      targetRepo: action?.target_repo ?? null,
      destructiveVerbs,
      projects,
      suppressedUntil,
    });
    const title = action ? this.outbound(action.proposed_action) : null;
    const draftId = outcome.route === "draft" ? this.newDraftId() : null;
    const result: MargotIntentResult = {
      interaction_id: completion.interaction_id,
      classification: classification.classification,
      confidence: classification.confidence,
      action_summary: title,
      target_repo: action?.target_repo ?? null,
      draft_id: draftId,
      skipped_reason: outcome.route === "stop" ? outcome.explanation : null,
      status: outcome.route === "stop" ? outcome.status : "drafted",
      reason: outcome.route === "stop" ? outcome.reason : null,
    };
    let draft: NewDraft | null = null;
    if (action && draftId && title) {
      const ticket: TicketInput = {
        proposed_action: title,
        interaction_id: completion.interaction_id,
        draft_id: draftId,
        ts: null,
        research_body: await this.outboundInSlices(completion.body),
        proposed_action_detail: this.outbound(action.proposed_action_detail),
        target_repo: action.target_repo,
        target_candidates: action.candidates,
        proposed_branch: action.proposed_branch,
        complexity_tier: action.complexity_tier,
        max_files: action.max_files,
        acceptance_criteria: action.acceptance_criteria.map((c) => this.outbound(c)),
        out_of_scope: action.out_of_scope.map((c) => this.outbound(c)),
      };
      draft = {
        id: draftId,
        interaction_id: completion.interaction_id,
        title,
        body: await this.outboundInSlices(renderTicket(ticket, { via: this.deps.channel.kind })),
        ticket,
        target_repo: action.target_repo,
        project: action.project,
        classification: classification.classification,
        confidence: classification.confidence,
        channel: this.deps.channel.kind,
        created_at: iso(this.now()),
      };
    }
    const follow_up =
      result.status === "follow_up"
        ? {
            interaction_id: completion.interaction_id,
            originating_session_id: completion.originating_session_id,
            originated_at: completion.originated_at,
            request: this.outbound(followUpSentences.join(" ")).slice(0, FOLLOW_UP_REQUEST_MAX) || "(no request sentence found)",
          }
        : null;
    return { job: jobKey, result, draft, follow_up, decided_at: iso(this.now()) };
  }

  private async carryOut(record: IntentRecord, token: string): Promise<MargotIntentResult> {
    const { intents, audit, ledger } = this.deps;
    const r = record.result;
    if (record.draft === null) {
      await intents.once(r.interaction_id, "audit:classified", () =>
        audit.emit({ type: "margot_intent_classified", interaction_id: r.interaction_id, classification: r.classification, confidence: r.confidence, status: r.status, reason: r.reason }),
      );
      if (r.status === "rejected") {
        await intents.once(r.interaction_id, "audit:rejected", () =>
          audit.emit({ type: "margot_intent_rejected", interaction_id: r.interaction_id, draft_id: null, reason: r.reason ?? "rejected", rejected_by: "rules" }),
        );
      }
      if (r.status === "follow_up" && record.follow_up) {
        const request = record.follow_up;
        await intents.once(r.interaction_id, "follow_up", async () => {
          await this.deps.followUps.append(request);
        });
      }
      const outcome = r.status === "rejected" || r.status === "suppressed" || r.status === "follow_up" ? r.status : "informational";
      await intents.once(r.interaction_id, "ledger", async () => {
        await ledger.append({ interaction_id: r.interaction_id, classification: r.classification, confidence: r.confidence, outcome, reason: r.reason ?? undefined });
      });
      return r;
    }
    return this.carryOutDraft(record, record.draft, token);
  }

  private async carryOutDraft(record: IntentRecord, newDraft: NewDraft, token: string): Promise<MargotIntentResult> {
    const { drafts, rateLimit, intents, audit, ledger, timers } = this.deps;
    const id = newDraft.id;
    // Sent back to back on the draft's key, so the read sees the create: one round trip.
    let [, draft] = await Promise.all([drafts.create(newDraft), this.mustGet(id)]);
    let number: number | null = null;
    if (draft.state === "pending") {
      const decision = await rateLimit.acquire(id, this.now());
      number = decision.number;
      if (!decision.granted) {
        await drafts.transition(id, { token, from: ["pending"], to: "queued", set: { queued_at: iso(this.now()), release_at: iso(decision.releaseAt), draft_number: decision.number } });
      }
      draft = await this.mustGet(id);
    }
    const queued = draft.state === "queued";
    const result: MargotIntentResult = {
      ...record.result,
      status: queued ? "queued_rate_limit" : "drafted",
      reason: queued ? "rate_limited" : null,
      skipped_reason: queued ? `rate limit: ${rateLimit.max} drafts per ${rateLimit.windowMs / 1000} s reached; draft ${id} is queued and posts at ${draft.release_at}` : null,
    };
    await intents.setResult(result);
    await intents.once(result.interaction_id, "audit:classified", () =>
      audit.emit({ type: "margot_intent_classified", interaction_id: result.interaction_id, classification: result.classification, confidence: result.confidence, status: result.status, reason: result.reason }),
    );
    if (queued) {
      const releaseAt = Date.parse(draft.release_at ?? iso(this.now()));
      await timers.scheduleRelease(id, releaseAt);
      await drafts.once(id, "ledger:queued", async () => {
        await ledger.append({ interaction_id: draft.interaction_id, classification: draft.classification, confidence: draft.confidence, outcome: "queued_rate_limit", draft_id: id, reason: "rate_limited" });
      });
      await drafts.once(id, "notice:queued", () => this.notice(`draft ${draft.draft_number ?? "?"} of ${rateLimit.max} ${windowWords(rateLimit.windowMs)} queued, posts at ${iso(releaseAt)} (${id}: ${draft.title})`));
      return result;
    }
    if (await this.held()) {
      // Kill switch on: the draft waits as queued and posts when it goes off.
      const at = this.now() + this.holdRecheckMs;
      await drafts.transition(id, { token, from: ["pending"], to: "queued", set: { queued_at: iso(this.now()), release_at: iso(at), draft_number: number } });
      await timers.scheduleHold(id, at);
      return { ...result, skipped_reason: `the kill switch is on: draft ${id} waits and is posted when it goes off` };
    }
    // Only from pending: a draft another job is posting stays that job's (its own retry resumes by token).
    await this.post(draft, token, { from: ["pending"], kind: "new", number });
    return result;
  }

  /** Send a draft (pending/queued/deferred → posting → posted), then its after-post effects. */
  private async post(draft: Draft, token: string, how: { from: Draft["state"][]; kind: "new" | "resurfaced"; number: number | null; generation?: number }): Promise<boolean> {
    const { drafts, channel } = this.deps;
    const id = draft.id;
    const begin = await drafts.transition(id, { token, from: how.from, to: "posting", ...(how.generation !== undefined ? { generation: how.generation } : {}) });
    if (begin.outcome === "refused") {
      if (begin.state === "posted") await this.afterPost(await this.mustGet(id));
      return false;
    }
    // resumed: an earlier attempt of this job began sending and died before recording the
    // message; it may or may not have arrived. Send again, saying so (ADR 0004).
    const generation = how.kind === "resurfaced" ? draft.generation + 1 : draft.generation;
    const expiresAt = this.now() + this.deps.settings.expiryMs;
    const kind = begin.outcome === "resumed" && how.kind === "new" ? "resent" : how.kind;
    const ref = await channel.postDraft({ draft_id: id, title: draft.title, body: await this.outboundInSlices(draft.body), kind, expires_at: iso(expiresAt) });
    await drafts.mapMessage(ref, id);
    const set: Record<string, string | number | null> = {
      posted_at: iso(this.now()),
      expires_at: iso(expiresAt),
      generation,
      messages: JSON.stringify([...draft.messages, ref]),
      resurface_at: null,
    };
    if (how.number !== null) set.draft_number = how.number;
    await drafts.transition(id, { token, from: ["posting"], to: "posted", set });
    await this.afterPost(await this.mustGet(id));
    return true;
  }

  /** After a draft is in the channel: its expiry timer, and (first post only) the drafted rows. */
  private async afterPost(draft: Draft): Promise<void> {
    const { drafts, timers, ledger, audit, channel } = this.deps;
    if (draft.expires_at) await timers.scheduleExpire(draft.id, draft.generation, Date.parse(draft.expires_at));
    await drafts.once(draft.id, "ledger:drafted", async () => {
      await ledger.append({ interaction_id: draft.interaction_id, classification: draft.classification, confidence: draft.confidence, outcome: "drafted", draft_id: draft.id });
    });
    await drafts.once(draft.id, "audit:drafted", () =>
      audit.emit({ type: "margot_intent_drafted", interaction_id: draft.interaction_id, draft_id: draft.id, target_repo: draft.target_repo, channel: channel.kind }),
    );
  }

  /** rate-limit-release: a queued draft tries for a slot again; it posts, or learns its new time. */
  async releaseQueued(draftId: string, token: string): Promise<TimerResult> {
    const draft = await this.deps.drafts.get(draftId);
    if (!draft) return { draft_id: draftId, changed: false, state: null };
    const waiting = draft.state === "queued" || draft.state === "posting" || (draft.state === "approved" && draft.linear_issue_id === null);
    if (waiting && (await this.held())) return { draft_id: draftId, changed: false, state: draft.state, retry_at: this.now() + this.holdRecheckMs };
    if (draft.state === "approved" && draft.linear_issue_id === null) {
      // An approval the kill switch held: create its Linear issue now.
      await this.accept(draft);
      return { draft_id: draftId, changed: true, state: "approved" };
    }
    if (draft.state === "queued" || draft.state === "posting") {
      const decision = await this.deps.rateLimit.acquire(draftId, this.now());
      if (!decision.granted) {
        await this.deps.drafts.update(draftId, { release_at: iso(decision.releaseAt), draft_number: decision.number });
        return { draft_id: draftId, changed: false, state: "queued", retry_at: decision.releaseAt };
      }
      const posted = await this.post(draft, token, { from: ["queued"], kind: "new", number: decision.number });
      return { draft_id: draftId, changed: posted, state: (await this.mustGet(draftId)).state };
    }
    if (draft.state === "posted") await this.afterPost(draft);
    return { draft_id: draftId, changed: false, state: draft.state };
  }

  // ------------------------------------------------------------ reactions and timers

  async react(req: ReactionRequest): Promise<ReactionResult> {
    const { drafts } = this.deps;
    const draft = await drafts.get(req.draft_id);
    const unchanged = (state: Draft["state"] | null, message: string): ReactionResult => ({ draft_id: req.draft_id, reaction: req.reaction, changed: false, state, message, accepted: null });
    if (!draft) return unchanged(null, `no draft ${req.draft_id}; nothing changed`);
    const now = iso(this.now());
    const decided = { decided_at: now, decided_by: req.actor };

    if (req.reaction === "approve") {
      const t = await drafts.transition(draft.id, { token: req.token, from: REACTABLE_STATES, to: "approved", set: decided });
      const current = await this.mustGet(draft.id);
      if ((t.outcome !== "refused" || (t.state === "approved" && current.linear_issue_id === null)) && (await this.held())) {
        await this.deps.timers.cancelExpire(current.id, current.generation);
        await this.deps.timers.scheduleHold(current.id, this.now() + this.holdRecheckMs);
        const message = `draft ${draft.id} approved; the kill switch is on, so its Linear issue is created when it goes off`;
        return { draft_id: draft.id, reaction: "approve", changed: t.outcome !== "refused", state: "approved", message, accepted: null };
      }
      if (t.outcome !== "refused") {
        const accepted = await this.accept(current);
        return { draft_id: draft.id, reaction: "approve", changed: true, state: "approved", message: `draft ${draft.id} approved → Linear ${accepted.linear_issue_identifier}`, accepted };
      }
      if (t.state === "approved" && current.linear_issue_id === null) {
        // Approved earlier but the issue was never created (Linear was down, the key missing): finish it now.
        try {
          const accepted = await this.accept(current);
          return { draft_id: draft.id, reaction: "approve", changed: true, state: "approved", message: `draft ${draft.id} was approved; its missing Linear issue is now ${accepted.linear_issue_identifier}`, accepted };
        } catch (err) {
          if (!(err instanceof IssueInProgress)) throw err;
          return { draft_id: draft.id, reaction: "approve", changed: false, state: "approved", message: `draft ${draft.id} is already approved; its Linear issue is being created now. Nothing changed`, accepted: null };
        }
      }
      return this.refused(draft, req, t.state);
    }
    if (req.reaction === "reject") {
      const reason = req.reason ? this.outbound(req.reason).slice(0, 500) : null;
      const t = await drafts.transition(draft.id, { token: req.token, from: REACTABLE_STATES, to: "rejected", set: { ...decided, reject_reason: reason } });
      if (t.outcome === "refused") return this.refused(draft, req, t.state);
      await this.rejected(await this.mustGet(draft.id));
      return { draft_id: draft.id, reaction: "reject", changed: t.outcome === "applied", state: "rejected", message: `draft ${draft.id} rejected${reason ? `: ${reason}` : ""}; no Linear issue`, accepted: null };
    }
    const resurfaceAt = this.now() + this.deps.settings.deferMs;
    const t = await drafts.transition(draft.id, { token: req.token, from: ["posted"], to: "deferred", set: { deferred_at: now, resurface_at: iso(resurfaceAt) } });
    if (t.outcome === "refused") return this.refused(draft, req, t.state);
    const deferred = await this.mustGet(draft.id);
    await this.deps.timers.cancelExpire(deferred.id, deferred.generation);
    await this.deps.timers.scheduleResurface(deferred.id, deferred.generation, Date.parse(deferred.resurface_at ?? iso(resurfaceAt)));
    await drafts.once(deferred.id, `notice:deferred:${deferred.generation}`, () => this.notice(`draft ${deferred.id} deferred; it comes back at ${deferred.resurface_at}`, deferred.messages.at(-1)));
    return { draft_id: draft.id, reaction: "defer", changed: true, state: "deferred", message: `draft ${draft.id} deferred until ${deferred.resurface_at}`, accepted: null };
  }

  private async refused(draft: Draft, req: ReactionRequest, state: Draft["state"] | null): Promise<ReactionResult> {
    const current = (await this.deps.drafts.get(draft.id)) ?? draft;
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
    const message = `draft ${draft.id} ${why}; your ${req.reaction} changed nothing`;
    await this.notice(message, current.messages.at(-1));
    return { draft_id: draft.id, reaction: req.reaction, changed: false, state, message, accepted: null };
  }

  private async accept(draft: Draft): Promise<MargotActionAccepted> {
    const { drafts, audit, ledger, timers } = this.deps;
    if (!this.deps.issues) {
      throw new BridgeError(`LINEAR_API_KEY is not set: draft ${draft.id} is approved but no Linear issue can be created; set it and approve again`);
    }
    await timers.cancelExpire(draft.id, draft.generation);
    let issue = draft.linear_issue_id
      ? { id: draft.linear_issue_id, identifier: draft.linear_issue_identifier ?? draft.linear_issue_id, url: draft.linear_issue_url, labels: draft.labels_applied }
      : null;
    if (!issue) {
      const tracker = this.deps.issues;
      const description = await this.outboundInSlices(renderTicket({ ...draft.ticket, draft_id: draft.id, ts: draft.decided_at ?? iso(this.now()) }, { via: draft.channel }));
      // One creator at a time per draft: two approvals racing must not both miss the marker and both create.
      const leased = await drafts.withLease(draft.id, "linear", LINEAR_LEASE_MS, async () => {
        const again = await this.mustGet(draft.id);
        if (again.linear_issue_id) return { id: again.linear_issue_id, identifier: again.linear_issue_identifier ?? again.linear_issue_id, url: again.linear_issue_url, labels: again.labels_applied };
        const created = (await tracker.createOnce({ interactionId: draft.interaction_id, title: draft.title, description, projectName: draft.project })).issue;
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
    await drafts.once(draft.id, "audit:accepted", () => audit.emit({ type: "margot_intent_accepted", ...accepted }));
    await drafts.once(draft.id, "ledger:accepted", async () => {
      await ledger.append({ interaction_id: draft.interaction_id, classification: draft.classification, confidence: draft.confidence, outcome: "accepted", draft_id: draft.id, linear_issue_id: issue.id });
    });
    await drafts.once(draft.id, "notice:accepted", () => this.notice(`draft ${draft.id} approved → Linear ${issue.identifier}${issue.url ? ` ${issue.url}` : ""}`, draft.messages.at(-1)));
    await drafts.retire(draft.id);
    return accepted;
  }

  private async rejected(draft: Draft): Promise<void> {
    const { drafts, audit, ledger, timers, intents } = this.deps;
    await timers.cancelExpire(draft.id, draft.generation);
    await intents.suppress(draft.interaction_id, this.now() + this.deps.settings.suppressMs, this.now());
    await drafts.once(draft.id, "audit:rejected", () =>
      audit.emit({ type: "margot_intent_rejected", interaction_id: draft.interaction_id, draft_id: draft.id, reason: draft.reject_reason ?? "founder_rejected", rejected_by: "founder" }),
    );
    await drafts.once(draft.id, "ledger:rejected", async () => {
      await ledger.append({ interaction_id: draft.interaction_id, classification: draft.classification, confidence: draft.confidence, outcome: "rejected", draft_id: draft.id, reason: "founder_rejected" });
    });
    await drafts.once(draft.id, "notice:rejected", () => this.notice(`draft ${draft.id} rejected; no Linear issue. Interaction ${draft.interaction_id} is suppressed until ${iso(this.now() + this.deps.settings.suppressMs)}`, draft.messages.at(-1)));
    await drafts.retire(draft.id);
  }

  /** draft-expire: no reaction within the expiry → expired (only the clock of the current generation counts). */
  async expire(draftId: string, generation: number, token: string): Promise<TimerResult> {
    const { drafts, audit, ledger } = this.deps;
    const t = await drafts.transition(draftId, { token, from: ["posted"], generation, to: "expired", set: { decided_at: iso(this.now()), decided_by: "timer" } });
    if (t.outcome === "refused") return { draft_id: draftId, changed: false, state: t.state };
    const draft = await this.mustGet(draftId);
    await drafts.once(draftId, "audit:expired", () => audit.emit({ type: "margot_intent_expired", interaction_id: draft.interaction_id, draft_id: draftId }));
    await drafts.once(draftId, "ledger:expired", async () => {
      await ledger.append({ interaction_id: draft.interaction_id, classification: draft.classification, confidence: draft.confidence, outcome: "expired", draft_id: draftId });
    });
    await drafts.once(draftId, "notice:expired", () => this.notice(`draft ${draftId} expired: no reaction by ${draft.expires_at}; nothing was created`, draft.messages.at(-1)));
    await drafts.retire(draftId);
    return { draft_id: draftId, changed: t.outcome === "applied", state: "expired" };
  }

  /** draft-resurface: a deferred draft comes back (posted again) with a new expiry clock. */
  async resurface(draftId: string, generation: number, token: string): Promise<TimerResult> {
    const draft = await this.deps.drafts.get(draftId);
    if (!draft) return { draft_id: draftId, changed: false, state: null };
    if (draft.generation !== generation && draft.state !== "posting") return { draft_id: draftId, changed: false, state: draft.state };
    if (await this.held()) return { draft_id: draftId, changed: false, state: draft.state, retry_at: this.now() + this.holdRecheckMs };
    const posted = await this.post(draft, token, { from: ["deferred"], kind: "resurfaced", number: null, generation });
    return { draft_id: draftId, changed: posted, state: (await this.mustGet(draftId)).state };
  }

  private async notice(text: string, replyTo?: MessageRef): Promise<void> {
    const clean = this.outbound(text);
    await this.deps.drafts.addNotice(clean, new Date(this.now()));
    await this.deps.channel.postNotice(clean, replyTo);
  }

  /** A duplicate answers with where the interaction stands now, not with its first decision. */
  private async duplicateOf(record: IntentRecord): Promise<MargotIntentResult> {
    const r = record.result;
    const draft = r.draft_id ? await this.deps.drafts.get(r.draft_id) : null;
    const state = draft ? (draft.state === "approved" && draft.linear_issue_id ? "accepted" : draft.state) : r.status;
    const detail = draft?.decided_by ? ` by ${draft.decided_by} at ${draft.decided_at}` : "";
    return {
      ...r,
      status: "duplicate",
      reason: "duplicate_interaction",
      current_state: state,
      skipped_reason: `interaction ${r.interaction_id} was already processed at ${record.decided_at} (${r.status}${r.draft_id ? `, draft ${r.draft_id}` : ""}); it is now ${state}${detail}`,
    };
  }

  private get holdRecheckMs(): number {
    return this.deps.settings.holdRecheckMs ?? 5000;
  }

  /** Whether the kill switch holds Margot's outbound effects now; the channel hears of it once per episode. */
  private async held(): Promise<boolean> {
    const { intents, killSwitch, channel } = this.deps;
    if (await killSwitch.isActive()) {
      if (await intents.markOnce("kill-switch-notice")) {
        const text = "the kill switch is on: new drafts and approvals wait; nothing is posted and no Linear issue is created until it goes off";
        await this.deps.drafts.addNotice(text, new Date(this.now()));
        await channel.postNotice(text);
      }
      return true;
    }
    await intents.clearMark("kill-switch-notice");
    return false;
  }

  private async mustGet(id: string): Promise<Draft> {
    const draft = await this.deps.drafts.get(id);
    if (!draft) throw new Error(`draft ${id} vanished`);
    return draft;
  }
}


function windowWords(windowMs: number): string {
  return windowMs === 86_400_000 ? "today" : `in this ${windowMs / 1000} s window`;
}
