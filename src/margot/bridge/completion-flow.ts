// The first of the bridge's two flows: research completion → prepare (assess, redact) → rules → claim →
// effects, and for an action-shaped one → draft → rate limit → post. Every step can be repeated: a job
// retried after a crash resumes the decision it claimed and repeats no effect recorded as done (ADR 0004).
// Waits are few on purpose (each is a round trip): the claim answers with the record that owns the interaction, the
// draft's creation goes out with its rate-limit count and the kill-switch read, a step's effects run
// together, and nobody waits for their marks (ADR 0023, ADR 0025).
import { newMarkerNonce } from "../../linear/issues.js";
import { iso, type BridgeDeps } from "./bridge-deps.js";
import type { MargotIntentResult, MargotResearchCompletion } from "../contract.js";
import type { DraftPoster } from "./draft-posting.js";
import { DraftClaim, type DraftClaimResult, type FreshDraft } from "./draft-claim.js";
import type { NewDraft, StoredDraft } from "../store/drafts.js";
import type { EffectLog } from "../store/effects.js";
import { INTENT_MEMORY_S, type ClaimOptions, type IntentRecord, type StoredIntent } from "../store/intents.js";
import { PreparationQueue, type PreparedCompletion } from "./prepare.js";
import type { Project } from "../projects.js";
import { applyRules } from "./rules.js";
import { renderTicket, type TicketInput } from "../ticket.js";

/** A decision made unaware of a suppression is made again knowing it; more than this many turns means the state keeps changing. */
const CLAIM_TURNS = 4;

export class CompletionFlow {
  private readonly draftClaim: DraftClaim;
  private readonly preparations: PreparationQueue;

  constructor(
    private readonly deps: BridgeDeps,
    private readonly poster: DraftPoster,
    private readonly now: () => number,
    private readonly newDraftId: () => string,
  ) {
    this.draftClaim = new DraftClaim(deps);
    this.preparations = new PreparationQueue(deps.settings.destructiveVerbs, poster.text);
  }

  /** One research completion. `jobKey` identifies the job (id + creation time), stable across its retries. */
  async process(completion: MargotResearchCompletion, jobKey: string): Promise<MargotIntentResult> {
    const projects = await this.deps.projects();
    const prepared = await this.preparations.prepare({ body: completion.body, interactionId: completion.interaction_id, projects });
    let suppressedUntil: Date | null = null;
    for (let turn = 0; turn < CLAIM_TURNS; turn++) {
      const record = this.decide(completion, jobKey, prepared, projects, suppressedUntil);
      const ttlS = suppressedUntil !== null ? (suppressedUntil.getTime() - this.now()) / 1000 : INTENT_MEMORY_S;
      const opts: ClaimOptions = { suppressedUntil, ttlS };
      const { claim, fresh }: DraftClaimResult = record.draft
        ? await this.draftClaim.claim(record, record.draft, opts, jobKey, this.now())
        : { claim: await this.deps.intents.claim(record, opts), fresh: null };
      if (claim.outcome === "suppressed") {
        suppressedUntil = claim.until;
        continue;
      }
      if (claim.outcome === "taken") return this.duplicateOf(claim.record);
      return this.carryOut(claim, jobKey, fresh);
    }
    throw new Error(`interaction ${completion.interaction_id}: its suppression changed ${CLAIM_TURNS} times while it was being decided; retrying`);
  }

  private decide(
    completion: MargotResearchCompletion,
    jobKey: string,
    prepared: PreparedCompletion,
    projects: readonly Project[],
    suppressedUntil: Date | null,
  ): IntentRecord {
    const { assessment, shown } = prepared;
    const { classification, action, destructiveVerbs } = assessment;
    const outcome = applyRules({ classification, targetRepo: action?.target_repo ?? null, destructiveVerbs, projects, suppressedUntil });
    const title = shown?.title ?? null;
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
    if (action && shown && draftId) {
      const ticket: TicketInput = {
        proposed_action: shown.title,
        interaction_id: completion.interaction_id,
        draft_id: draftId,
        research_body: shown.research_body,
        proposed_action_detail: shown.detail,
        target_repo: action.target_repo,
        target_candidates: action.candidates,
        proposed_branch: action.proposed_branch,
        complexity_tier: action.complexity_tier,
        max_files: action.max_files,
        acceptance_criteria: [...shown.acceptance_criteria],
        out_of_scope: [...shown.out_of_scope],
        template_lines: shown.template_lines,
      };
      // Every part that goes into the body was redacted when it was prepared, so the body needs no pass of its own (and none when it is sent).
      const shownTicket: TicketInput = {
        ...ticket,
        interaction_id: shown.interaction_id,
        target_repo: shown.target_repo,
        target_candidates: [...shown.target_candidates],
        proposed_branch: shown.proposed_branch,
      };
      draft = {
        id: draftId,
        interaction_id: completion.interaction_id,
        title: shown.title,
        body: renderTicket(shownTicket, { via: this.deps.channel.kind }),
        ticket,
        target_repo: action.target_repo,
        project: action.project,
        classification: classification.classification,
        confidence: classification.confidence,
        channel: this.deps.channel.kind,
        created_at: iso(this.now()),
        marker_nonce: newMarkerNonce(),
      };
    }
    const follow_up =
      result.status === "follow_up"
        ? {
            interaction_id: completion.interaction_id,
            originating_session_id: completion.originating_session_id,
            originated_at: completion.originated_at,
            request: prepared.followUpRequest || "(no request sentence found)",
          }
        : null;
    return { job: jobKey, result, draft, follow_up, decided_at: iso(this.now()) };
  }

  private async carryOut({ record, effects }: StoredIntent, token: string, fresh: FreshDraft | null): Promise<MargotIntentResult> {
    const { audit, ledger, followUps } = this.deps;
    const r = record.result;
    if (r.draft_id !== null) return this.carryOutDraft(record, r.draft_id, effects, token, fresh);
    const outcome = r.status === "rejected" || r.status === "suppressed" || r.status === "follow_up" ? r.status : "informational";
    const followUp = r.status === "follow_up" ? record.follow_up : null;
    await effects.run([
      this.classified(r),
      ...(r.status === "rejected"
        ? [
            [
              "audit:rejected",
              () =>
                audit.emit({
                  type: "margot_intent_rejected",
                  interaction_id: r.interaction_id,
                  draft_id: null,
                  reason: r.reason ?? "rejected",
                  rejected_by: "rules",
                }),
            ] as const,
          ]
        : []),
      ...(followUp ? [["follow_up", () => followUps.append(followUp)] as const] : []),
      [
        "ledger",
        () =>
          ledger.append({
            interaction_id: r.interaction_id,
            classification: r.classification,
            confidence: r.confidence,
            outcome,
            reason: r.reason ?? undefined,
          }),
      ],
    ]);
    return r;
  }

  private classified(r: MargotIntentResult) {
    return [
      "audit:classified",
      () =>
        this.deps.audit.emit({
          type: "margot_intent_classified",
          interaction_id: r.interaction_id,
          classification: r.classification,
          confidence: r.confidence,
          status: r.status,
          reason: r.reason,
        }),
    ] as const;
  }

  private async carryOutDraft(
    record: IntentRecord,
    id: string,
    intentEffects: EffectLog,
    token: string,
    fresh: FreshDraft | null,
  ): Promise<MargotIntentResult> {
    const { drafts, rateLimit, ledger, timers } = this.deps;
    const { stored, decision, hold, begun } = fresh ?? (await this.resumeDraft(record, id));
    let current: StoredDraft = stored;
    if (decision?.granted === false) {
      const t = await drafts.transition(id, {
        token,
        from: ["pending"],
        to: "queued",
        set: { queued_at: iso(this.now()), release_at: iso(decision.releaseAt), draft_number: decision.number },
        read: true,
      });
      if (t.draft) current = t.draft;
    }
    const { draft, effects } = current;
    const queued = draft.state === "queued";
    const result: MargotIntentResult = {
      ...record.result,
      status: queued ? "queued_rate_limit" : "drafted",
      reason: queued ? "rate_limited" : null,
      skipped_reason: queued
        ? `rate limit: ${rateLimit.max} drafts per ${rateLimit.windowMs / 1000} s reached; draft ${id} is queued and posts at ${draft.release_at}`
        : null,
    };
    // The classified row, and a queued result for duplicates to report (a drafted one is the claimed record): beside the next steps, not before them.
    const recorded = Promise.all([intentEffects.run([this.classified(result)]), queued ? intentEffects.record({ result: JSON.stringify(result) }) : null]);
    recorded.catch(() => {}); // awaited below; a rejection meanwhile is not unhandled
    try {
      if (queued) {
        const releaseAt = Date.parse(draft.release_at ?? iso(this.now()));
        await timers.scheduleRelease(id, releaseAt);
        await effects.run([
          [
            "ledger:queued",
            () =>
              ledger.append({
                interaction_id: draft.interaction_id,
                classification: draft.classification,
                confidence: draft.confidence,
                outcome: "queued_rate_limit",
                draft_id: id,
                reason: "rate_limited",
              }),
          ],
          [
            "notice:queued",
            () =>
              this.poster.notice(
                `draft ${draft.draft_number ?? "?"} of ${rateLimit.max} ${windowWords(rateLimit.windowMs)} queued, posts at ${iso(releaseAt)} (${id}: ${draft.title})`,
              ),
          ],
        ]);
        return result;
      }
      if (await this.poster.held(hold)) {
        // Kill switch on: the draft waits as queued and posts when it goes off.
        const at = this.now() + this.poster.holdRecheckMs;
        // Still pending: the draft claim begins a draft only while the switch is off (the same reading as `hold`).
        await drafts.transition(id, {
          token,
          from: ["pending"],
          to: "queued",
          set: { queued_at: iso(this.now()), release_at: iso(at), draft_number: decision?.number ?? null },
        });
        await timers.scheduleHold(id, at);
        return { ...result, skipped_reason: `the kill switch is on: draft ${id} waits and is posted when it goes off` };
      }
      // Only from pending: a draft another job is posting stays that job's (its own retry resumes by token).
      await this.poster.post(current, token, { from: ["pending"], begun, kind: "new", number: decision?.number ?? null });
      return result;
    } finally {
      await recorded;
    }
  }

  /**
   * A retry of a claimed draft decision: the draft (created with the claim; by an earlier version, perhaps
   * not yet), counted while it is still pending, and the kill switch read, in one round trip.
   */
  private async resumeDraft(record: IntentRecord, id: string): Promise<FreshDraft> {
    const { drafts, rateLimit } = this.deps;
    const [stored, decision, hold] = await Promise.all([
      record.draft ? drafts.create(record.draft) : drafts.mustRead(id),
      rateLimit.acquireIf(id, this.now(), { key: drafts.key(id), states: ["pending"] }),
      this.poster.holdState(),
    ]);
    return { stored, decision, hold, begun: false };
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
}

function windowWords(windowMs: number): string {
  return windowMs === 86_400_000 ? "today" : `in this ${windowMs / 1000} s window`;
}
