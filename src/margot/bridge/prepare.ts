// What a research completion becomes before any state is touched: its assessment, and every part of it
// that may leave the process, already redacted. Pure CPU, in steps: a small body (most) is prepared in
// one stretch, a large one with pauses that let other jobs and lock renewals run (ADR 0017, ADR 0025).
import { assessmentSteps, type Assessment, type AssessOptions } from "../reading/assess.js";
import { FOLLOW_UP_REQUEST_MAX } from "../store/follow-ups.js";
import type { OutboundText } from "./outbound.js";
import type { Project } from "../projects.js";
import { runSteps, SLICE_MS, yieldToEventLoop, type Pause } from "../reading/text-slices.js";

/** The parts of an action-shaped completion that a draft shows, each redacted (secrets, then PII). */
export interface ShownAction {
  readonly title: string;
  readonly detail: string;
  readonly research_body: string;
  readonly acceptance_criteria: readonly string[];
  readonly out_of_scope: readonly string[];
  readonly interaction_id: string;
  readonly target_repo: string | null;
  readonly target_candidates: readonly string[];
  readonly proposed_branch: string;
  /** Lines of the body shaped like the ticket template's own, left unread (template-lines.ts). */
  readonly template_lines: number;
}

export interface PreparedCompletion {
  readonly assessment: Assessment;
  /** null unless the completion is action-shaped. */
  readonly shown: ShownAction | null;
  /** What a follow-up asks for, redacted and capped; "" when no sentence asks for more research. */
  readonly followUpRequest: string;
}

export interface PrepareInput {
  readonly body: string;
  readonly interactionId: string;
  readonly projects: readonly Project[];
}

/** The steps as a generator: each `yield` is a point where the work may pause. */
export function* preparationSteps(input: PrepareInput, destructiveVerbs: readonly string[], text: OutboundText): Generator<void, PreparedCompletion> {
  const options: AssessOptions = { projects: input.projects, destructiveVerbs, interactionId: input.interactionId, rulesOnly: true };
  const assessment = yield* assessmentSteps(input.body, options);
  const { action } = assessment;
  let shown: ShownAction | null = null;
  if (action) {
    yield;
    const research_body = yield* text.textSteps(input.body);
    shown = {
      title: text.text(action.proposed_action),
      detail: text.text(action.proposed_action_detail),
      research_body,
      acceptance_criteria: action.acceptance_criteria.map((c) => text.text(c)),
      out_of_scope: action.out_of_scope.map((c) => text.text(c)),
      interaction_id: text.text(input.interactionId),
      target_repo: action.target_repo === null ? null : text.text(action.target_repo),
      target_candidates: action.candidates.map((c) => text.text(c)),
      proposed_branch: text.text(action.proposed_branch),
      template_lines: assessment.templateLines,
    };
  }
  const asks = assessment.followUpSentences;
  const followUpRequest = asks.length > 0 ? text.text(asks.join(" ")).slice(0, FOLLOW_UP_REQUEST_MAX) : "";
  return { assessment, shown, followUpRequest };
}

interface Queued {
  readonly input: PrepareInput;
  resolve(prepared: PreparedCompletion): void;
  reject(err: unknown): void;
}

/**
 * The completions asked for in one turn of the event loop are prepared together, in its check phase, one
 * after another: back to back their patterns stay in the processor's caches, which other jobs' Redis and file
 * work in between would evict. The steps pause for a turn once a stretch of them has
 * held the loop for SLICE_MS, so a large body never holds it long; the results ready so far are handed out at
 * each pause and at the end, not one by one (a job told of its result would run between two preparations).
 */
export class PreparationQueue {
  private queued: Queued[] = [];

  constructor(
    private readonly destructiveVerbs: readonly string[],
    private readonly text: OutboundText,
    private readonly pause: Pause = yieldToEventLoop,
  ) {}

  prepare(input: PrepareInput): Promise<PreparedCompletion> {
    return new Promise<PreparedCompletion>((resolve, reject) => {
      this.queued.push({ input, resolve, reject });
      if (this.queued.length === 1) setImmediate(() => void this.run());
    });
  }

  private async run(): Promise<void> {
    const batch = this.queued.splice(0);
    const finished: Array<() => void> = [];
    const settle = () => {
      for (const done of finished.splice(0)) done();
    };
    let sliceStart = performance.now();
    for (const { input, resolve, reject } of batch) {
      try {
        const steps = preparationSteps(input, this.destructiveVerbs, this.text);
        for (let next = steps.next(); ; next = steps.next()) {
          if (next.done) {
            const prepared = next.value;
            finished.push(() => resolve(prepared));
            break;
          }
          if (performance.now() - sliceStart >= SLICE_MS) {
            settle();
            await this.pause();
            sliceStart = performance.now();
          }
        }
      } catch (err) {
        finished.push(() => reject(err));
      }
    }
    settle();
  }
}

/** The steps in one go (tests, and what the sliced version must equal). */
export function prepareNow(input: PrepareInput, destructiveVerbs: readonly string[], text: OutboundText): PreparedCompletion {
  return runSteps(preparationSteps(input, destructiveVerbs, text));
}
