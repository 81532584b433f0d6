// The Margot bridge: its two flows over one set of dependencies. A research completion goes
// completion-flow.ts (assess → rules → draft → post); a reaction or a timer goes review-flow.ts
// (→ Linear, rejection, defer, expiry, release). Both send drafts and notices through draft-posting.ts.
import { randomUUID } from "node:crypto";
import type { BridgeDeps } from "./bridge-deps.js";
import { CompletionFlow } from "./completion-flow.js";
import type { MargotIntentResult, MargotResearchCompletion } from "../contract.js";
import { DraftPoster } from "./draft-posting.js";
import { OutboundText } from "./outbound.js";
import { ReviewFlow, type ReactionRequest, type ReactionResult, type TimerResult } from "./review-flow.js";

export type { BridgeDeps, BridgeSettings, DraftTimers } from "./bridge-deps.js";
export { IssueInProgress, type ReactionRequest, type ReactionResult, type TimerResult } from "./review-flow.js";

export class MargotBridge {
  private readonly completions: CompletionFlow;
  private readonly reviews: ReviewFlow;

  constructor(deps: BridgeDeps) {
    const now = deps.now ?? Date.now;
    const poster = new DraftPoster(deps, new OutboundText(deps.settings.pii), now);
    this.completions = new CompletionFlow(deps, poster, now, deps.newDraftId ?? newDraftId);
    this.reviews = new ReviewFlow(deps, poster, now);
  }

  /** One research completion. `jobKey` identifies the job (id + creation time), stable across its retries. */
  processCompletion(completion: MargotResearchCompletion, jobKey: string): Promise<MargotIntentResult> {
    return this.completions.process(completion, jobKey);
  }

  react(req: ReactionRequest): Promise<ReactionResult> {
    return this.reviews.react(req);
  }

  expire(draftId: string, generation: number, token: string): Promise<TimerResult> {
    return this.reviews.expire(draftId, generation, token);
  }

  resurface(draftId: string, generation: number, token: string): Promise<TimerResult> {
    return this.reviews.resurface(draftId, generation, token);
  }

  releaseQueued(draftId: string, token: string): Promise<TimerResult> {
    return this.reviews.releaseQueued(draftId, token);
  }
}

/**
 * "d-" and 12 random hex digits: the first 12 of a v4 UUID's 32 (its version digit is the 13th). randomUUID draws
 * from Node's cached entropy, where randomBytes asks the system for a few bytes per draft on the main thread.
 */
function newDraftId(): string {
  const uuid = randomUUID();
  return `d-${uuid.slice(0, 8)}${uuid.slice(9, 13)}`;
}
