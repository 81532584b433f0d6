// What the bridge and `classify` both do with a research body: read it once, classify the
// reading, extract the action from the same reading when it is action-shaped, and find
// destructive actions. Pure; the rules that need state (loop detection, rate limit) come after.
// Lines that imitate the ticket template are not read (template-lines.ts, ADR 0040).
import { classify, type ClassifyResult } from "./classify.js";
import { destructiveVerbsIn } from "./destructive.js";
import { extractAction, type ExtractedAction } from "./extract.js";
import type { Project } from "../projects.js";
import { readingSteps } from "./reading.js";
import { withoutTemplateLines } from "./template-lines.js";
import { runSteps } from "./text-slices.js";

export interface Assessment {
  readonly classification: ClassifyResult;
  readonly action: ExtractedAction | null;
  /** Destructive verbs used as actions on an object (see destructive.ts); with `rulesOnly`, looked for in action-shaped text only. */
  readonly destructiveVerbs: string[];
  /** The sentences that ask for more research (what a follow-up asks for). */
  readonly followUpSentences: string[];
  /** Lines of the body shaped like the ticket template's own, left unread. */
  readonly templateLines: number;
}

export interface AssessOptions {
  readonly projects: readonly Project[];
  readonly destructiveVerbs: readonly string[];
  readonly interactionId?: string;
  /** Only what the bridge's rules read: they weigh destructive verbs only for action-shaped text (rules.ts, rule 3). */
  readonly rulesOnly?: boolean;
}

/** The steps as a generator: each `yield` is a point where the work may pause. */
export function* assessmentSteps(text: string, options: AssessOptions): Generator<void, Assessment> {
  const research = withoutTemplateLines(text);
  yield;
  const reading = yield* readingSteps(research.text);
  const classification = classify(reading);
  yield;
  const action =
    classification.classification === "action_shaped"
      ? extractAction(reading, { projects: options.projects, ...(options.interactionId !== undefined ? { interaction_id: options.interactionId } : {}) })
      : null;
  yield;
  const followUpSentences = reading.sentences.filter((s) => s.followUps.length > 0).map((s) => s.text);
  // Destructive verbs are looked for in the whole body, imitations too: finding more only raises the bar.
  const destructiveVerbs = options.rulesOnly && classification.classification !== "action_shaped" ? [] : destructiveVerbsIn(text, options.destructiveVerbs);
  return { classification, action, destructiveVerbs, followUpSentences, templateLines: research.count };
}

export function assess(text: string, options: AssessOptions): Assessment {
  return runSteps(assessmentSteps(text, options));
}
