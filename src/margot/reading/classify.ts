// The intent router for Margot research output: action_shaped | informational | unknown. Deterministic
// and explainable: each sentence of the reading is scored for action (scoring.ts, where the cues and
// their weights are described), and the best-scoring sentence with a directive is the action sentence.
//
// The result:
//   action_shaped  its score ≥ 0.75 (ACTION_CONFIDENCE_FLOOR); confidence = that score.
//   unknown        empty, too short (< 4 words), only fenced code, garbled (almost no
//                  English function words), a failed-research notice, a negated
//                  sentence about the same thing as an action sentence scoring ≥ 0.6
//                  (mixed evidence), or a best score in [0.6, 0.75) with no cue
//                  against it (partial evidence).
//   informational  everything else; confidence 0.95 − 0.6 × best score, minus 0.2
//                  when a hedged sentence names real code (ambiguous), within [0.55, 0.95].
// Confidence is always the confidence in the returned label, two decimals.
import type { Classification } from "../contract.js";
import { FUNCTION_WORDS } from "./lexicon.js";
import { RESEARCH_FAILED } from "./cues.js";
import { readResearch, surfacesOf, type ResearchReading, type SentenceReading } from "./reading.js";

export type { Classification };

/** The confidence at or above which a finding routes to action (a draft). */
export const ACTION_CONFIDENCE_FLOOR = 0.75;

export type UnknownReason =
  | "empty"
  | "too_short"
  | "no_prose"
  | "incoherent"
  | "research_failed"
  | "mixed_evidence"
  | "partial_evidence"
  | "question"
  | "placeholder"
  | "inconclusive";

export interface ClassifySignals {
  /** Directive phrase and action verbs of the action sentence. */
  action_verbs: string[];
  /** Code surfaces named in the action sentence. */
  code_surfaces: string[];
  /** Measurable outcomes (or purpose clauses) in the action sentence. */
  measurable_outcomes: string[];
  /** Cues that count against action, found anywhere in the text. */
  hedges: string[];
  negations: string[];
  questions: string[];
  intel: string[];
  research_follow_up: string[];
  conditionals: string[];
  reported_advice: string[];
  placeholders: string[];
  inconclusive: string[];
  /** Negated sentences that contradict the action sentence. */
  conflicts: string[];
  /** The strongest actionable sentence (null when none carries a directive). */
  action_sentence: string | null;
  /** Why the classification is unknown, when it is. */
  unknown_reason: UnknownReason | null;
}

export interface ClassifyResult {
  classification: Classification;
  /** Confidence in `classification`, 0..1, two decimals. */
  confidence: number;
  signals: ClassifySignals;
}

/** Whether `text` with whitespace runs collapsed and trimmed is at least `n` long (stops at n, no copy). */
function collapsedAtLeast(text: string, n: number): boolean {
  const run = /\s+/y;
  let length = 0;
  let gap = false;
  for (let i = 0; i < text.length && length < n; ) {
    run.lastIndex = i;
    if (run.test(text)) {
      gap = length > 0;
      i = run.lastIndex;
      continue;
    }
    length += gap ? 2 : 1;
    gap = false;
    i++;
  }
  return length >= n;
}

// ---------------------------------------------------------------- contradiction

const CONTENT_STOP = new Set([
  ...FUNCTION_WORDS, "need", "needs", "however", "there", "yet", "until", "now", "just", "any", "anything", "new",
  "because", "during", "prices", "instead",
]);

/** The verb phrase after a directive or negation, up to the first purpose or reason clause. */
function core(text: string, from: number): Set<string> {
  const rest = text
    .slice(from)
    .split(/\bso\s+that\b|\bso\b|\bbecause\b|\bsince\b|\buntil\b|\bwhich\b|\bby\b|,|\bto\s+(?:cut|reduce|bring|prevent|avoid|keep|lower|improve|make)\b/i)[0] ?? "";
  const set = new Set<string>();
  for (const raw of rest.toLowerCase().match(/[a-z0-9][a-z0-9_./-]*/g) ?? []) {
    const w = raw.replace(/\.+$/, ""); // a sentence-final dot is not part of the word
    if (!CONTENT_STOP.has(w) && w.length > 1) set.add(w);
  }
  return set;
}

function negationCore(s: SentenceReading): Set<string> {
  const lower = s.text.toLowerCase();
  let end = -1;
  for (const phrase of s.negations) {
    const at = lower.indexOf(phrase.toLowerCase());
    if (at >= 0) end = Math.max(end, at + phrase.length);
  }
  return end < 0 ? new Set() : core(s.text, end);
}

/** `a`: the core of the action sentence, computed once by the caller. */
function contradicts(a: ReadonlySet<string>, negated: SentenceReading): boolean {
  const n = negationCore(negated);
  if (a.size === 0 || n.size === 0) return false;
  let shared = 0;
  for (const w of n) if (a.has(w)) shared++;
  // Two shared content words, or every content word of the negated clause ("… should not enable it").
  return (shared >= 2 && shared / Math.min(a.size, n.size) >= 0.6) || (shared >= 1 && shared === n.size);
}

// ---------------------------------------------------------------- classify

const round2 = (x: number) => Math.round(Math.min(1, Math.max(0, x)) * 100) / 100;

function emptySignals(): ClassifySignals {
  return {
    action_verbs: [], code_surfaces: [], measurable_outcomes: [], hedges: [], negations: [], questions: [],
    intel: [], research_follow_up: [], placeholders: [], inconclusive: [], conditionals: [], reported_advice: [], conflicts: [], action_sentence: null,
    unknown_reason: null,
  };
}

function unknown(reason: UnknownReason, confidence: number, signals: ClassifySignals = emptySignals()): ClassifyResult {
  return { classification: "unknown", confidence: round2(confidence), signals: { ...signals, unknown_reason: reason } };
}

function uniq(list: string[]): string[] {
  const seen = new Set<string>();
  return list.filter((x) => {
    const k = x.toLowerCase();
    if (seen.has(k)) return false;
    seen.add(k);
    return true;
  });
}

/** Classify one Margot research body. Pure and deterministic. */
export function classify(input: string | ResearchReading): ClassifyResult {
  const reading = typeof input === "string" ? readResearch(input) : input;
  const { prose, hadFence, wordCount, functionWordCount: functionWords } = reading;
  if (reading.normalised.trim() === "") return unknown("empty", 0.95);
  const placeholderCount = reading.sentences.filter((s) => s.placeholders.length > 0).length;
  if (placeholderCount > 0 && (wordCount < 40 || placeholderCount * 3 >= reading.sentences.length)) {
    return unknown("placeholder", 0.8, { ...emptySignals(), placeholders: uniq(reading.sentences.flatMap((s) => s.placeholders)) });
  }
  if (wordCount < 4 || !collapsedAtLeast(prose, 20)) {
    return unknown(hadFence ? "no_prose" : "too_short", 0.9);
  }
  if (functionWords === 0 || functionWords / wordCount < 0.06) return unknown("incoherent", 0.85);
  if (reading.sentences.length <= 2 && RESEARCH_FAILED.test(prose)) return unknown("research_failed", 0.8);
  const { sentences, best } = reading;
  const signals = emptySignals();
  for (const s of sentences) {
    signals.hedges.push(...s.hedges);
    signals.negations.push(...s.negations);
    if (s.question) signals.questions.push(s.text);
    signals.intel.push(...s.intel);
    signals.research_follow_up.push(...s.followUps);
    signals.conditionals.push(...s.conditionals);
    signals.reported_advice.push(...s.reported);
    signals.placeholders.push(...s.placeholders);
    signals.inconclusive.push(...s.inconclusive);
  }
  for (const key of [
    "hedges", "negations", "questions", "intel", "research_follow_up", "conditionals", "reported_advice", "placeholders", "inconclusive",
  ] as const) {
    signals[key] = uniq(signals[key]);
  }
  if (best) {
    signals.action_sentence = best.text;
    signals.action_verbs = uniq([...(best.directive ? [best.directive.phrase.trim().replace(/\s+/g, " ")] : []), ...best.actionVerbs]);
    signals.code_surfaces = surfacesOf(best);
    signals.measurable_outcomes = uniq([...best.measurable, ...best.purpose]);
  }
  const bestScore = best?.score ?? 0;

  if (best && bestScore >= 0.6) {
    const actionCore = best.directive ? core(best.text, best.directive.end) : new Set<string>();
    const conflicts = sentences.filter((s) => s.negations.length > 0 && s !== best && contradicts(actionCore, s));
    if (conflicts.length > 0) {
      signals.conflicts = conflicts.map((s) => s.text);
      return unknown("mixed_evidence", 0.5, signals);
    }
  }

  if (best && bestScore >= ACTION_CONFIDENCE_FLOOR) {
    return { classification: "action_shaped", confidence: round2(bestScore), signals };
  }

  // The third class: what is not a finding at all, or a finding that settles nothing.
  // An intel question ("what's the latest on X?") introduces intel; it asks nothing of us.
  const asks = (s: SentenceReading) => s.question && s.intel.length === 0;
  const questionCount = sentences.filter(asks).length;
  if ((sentences[0] !== undefined && asks(sentences[0])) || questionCount * 3 >= sentences.length) return unknown("question", 0.7, signals);
  if (signals.inconclusive.length > 0) return unknown("inconclusive", 0.65, signals);

  const counterCues =
    signals.hedges.length + signals.negations.length + signals.questions.length + signals.intel.length +
    signals.research_follow_up.length + signals.conditionals.length + signals.reported_advice.length;
  if (best && bestScore >= 0.6 && counterCues === 0) {
    // Most of an action, nothing against it: too close to call either way.
    return unknown("partial_evidence", 0.5, signals);
  }
  // A hedged recommendation about real code is informational, but less surely so.
  const hedgedCandidate = sentences.some(
    (s) =>
      s.hedges.length + s.conditionals.length + s.reported.length > 0 &&
      s.negations.length === 0 &&
      (s.surface === "strong" || s.actionVerbs.length > 0),
  );
  const confidence = Math.min(0.95, Math.max(0.55, 0.95 - bestScore * 0.6 - (hedgedCandidate ? 0.2 : 0)));
  return { classification: "informational", confidence: round2(confidence), signals };
}

