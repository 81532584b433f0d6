// How much a sentence reads as a request for a change, 0..0.98. Deterministic and explainable: the text is
// cut into sentences (lines, bullets, headings, sentence ends, ";" and ", but"); each sentence is read for
// three cues for action and for the cues that cancel them:
//
//   directive   0.40 strong: "we/you/the team should|must|need to", "I recommend (that we)",
//                    "Recommend adding …", a label ("Recommendation:", "Action:",
//                    "The fix:"), an imperative verb first ("Fix the …", also after
//                    "TL;DR:"), or a modal whose subject is a named code surface
//                    ("The auth middleware must set …");
//               0.28 medium: any other subject with should/must/needs to.
//   action verb 0.15 the verb the directive governs is an action verb (add, fix, …);
//               0.07 one appears elsewhere in the sentence.
//   surface     0.25 a specific code surface: file path, endpoint, `code`, call(),
//                    identifier, or modifiers + surface noun ("the Stripe webhook handler");
//               0.12 a bare surface noun ("the webhook").
//   outcome     0.20 measurable in the sentence (numbers with units, %, from X to Y,
//                    thresholds, "to zero"); 0.12 a purpose clause ("so that …") or
//                    a measurable next sentence; 0.06 measurable elsewhere.
//
// No directive caps a sentence at 0.45. Hedges ("could consider", "might be
// worth", "whether"), conditions ("if churn rises …") and advice reported from
// others ("according to …", "Apple says …") scale it down (×0.55 / ×0.6 / ×0.6);
// negation of the directive ("no need to", "should not", "don't need to"),
// questions and research follow-ups ("do another deep dive", "investigate
// further", a directive governing investigate/research/evaluate) zero it.
// The best-scoring sentence with a directive is the action sentence (classify.ts decides from it).
import type { DirectiveStrength } from "./directives.js";
import { ACTION_VERBS } from "./lexicon.js";
import type { SurfaceStrength } from "./surfaces.js";

/** What a sentence's score is made of (a sentence's reading, reading.ts). */
export interface ScoredSentence {
  readonly directive: { readonly strength: DirectiveStrength } | null;
  readonly governedVerb: string | null;
  readonly actionVerbs: readonly string[];
  readonly surface: SurfaceStrength;
  readonly measurable: readonly string[];
  readonly purpose: readonly string[];
  readonly hedges: readonly string[];
  readonly negations: readonly string[];
  readonly question: boolean;
  readonly followUps: readonly string[];
  readonly conditionals: readonly string[];
  readonly reported: readonly string[];
  score: number;
}

export function scoreSentence(s: ScoredSentence, neighbourMeasurable: boolean, docMeasurable: boolean): number {
  if (s.negations.length > 0 || s.question || s.followUps.length > 0) return 0;
  const directive = s.directive ? (s.directive.strength === "strong" ? 0.4 : 0.28) : 0;
  let verb = 0;
  if (s.directive && s.governedVerb && ACTION_VERBS.has(s.governedVerb)) verb = 0.15;
  else if (s.directive && s.actionVerbs.length > 0) verb = 0.07;
  const surface = s.surface === "none" ? 0 : s.surface === "strong" ? 0.25 : 0.12;
  const outcome =
    s.measurable.length > 0 ? 0.2 : s.purpose.length > 0 || neighbourMeasurable ? 0.12 : docMeasurable ? 0.06 : 0;
  let score = directive + verb + surface + outcome;
  if (!s.directive) score = Math.min(score, 0.45);
  if (s.hedges.length > 0) score *= 0.55;
  if (s.conditionals.length > 0) score *= 0.6;
  if (s.reported.length > 0) score *= 0.6;
  return Math.min(score, 0.98);
}

/** Scores every sentence in place (they are many on a large body: no copies) and returns the action sentence, if any. */
export function scoreSentences<S extends ScoredSentence>(sentences: readonly S[]): S | null {
  const docMeasurable = sentences.some((s) => s.measurable.length > 0);
  const outcomeNext = (n: S | undefined) => n !== undefined && n.measurable.length > 0 && !n.directive;
  for (let i = 0; i < sentences.length; i++) {
    const s = sentences[i]!;
    s.score = scoreSentence(s, outcomeNext(sentences[i + 1]) || outcomeNext(sentences[i + 2]), docMeasurable);
  }
  let best: S | null = null;
  for (const s of sentences) if (s.directive && s.score > 0 && (!best || s.score > best.score)) best = s;
  return best;
}
