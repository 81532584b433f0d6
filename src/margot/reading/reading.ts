// One reading of a Margot research body: normalised once, cut into sentences once (sentences.ts), each
// sentence read once for its directive and governed verb (directives.ts), its cues (cues.ts) and what
// it names of code (surfaces.ts), through one pass over its words (words.ts), then scored (scoring.ts).
// `classify` and `extract` both draw from it. Pure.
import { collect, CUE_GROUPS, endsWithQuestion, NO_CUES, type CueGroup } from "./cues.js";
import { findDirective, verbOf, type Directive } from "./directives.js";
import { ACTION_VERBS, DEFERRAL_VERBS, RESEARCH_VERBS } from "./lexicon.js";
import { scoreSentences } from "./scoring.js";
import { boundTokens, normalise, splitSentences, stripFences } from "./sentences.js";
import { surfacePhrases, surfaceStrength, type SurfaceStrength } from "./surfaces.js";
import { runSteps, SLICE_MS } from "./text-slices.js";
import { scanWords } from "./words.js";

/** Everything read from one sentence; exported for extraction. Cue lists are read-only: sentences without a cue share one empty list. */
export interface SentenceReading {
  index: number;
  text: string;
  directive: Directive | null;
  governedVerb: string | null;
  actionVerbs: string[];
  /** What the sentence names of code, read only where a recommendation is or a hedged one may be (`surfacesOf` lists them). */
  surface: SurfaceStrength;
  measurable: readonly string[];
  purpose: readonly string[];
  hedges: readonly string[];
  negations: readonly string[];
  question: boolean;
  intel: readonly string[];
  followUps: readonly string[];
  conditionals: readonly string[];
  reported: readonly string[];
  placeholders: readonly string[];
  inconclusive: readonly string[];
  /** 0..0.98 before rounding (scoring.ts). */
  score: number;
}

export interface ResearchReading {
  /** The text as given, line ends and quotes normalised (fenced code included). */
  normalised: string;
  /** Prose with fenced code removed, over-long tokens cut. */
  prose: string;
  /** Whether the text had fenced code. */
  hadFence: boolean;
  /** Words in the prose, and how many of them are English function words (a garble check). */
  wordCount: number;
  functionWordCount: number;
  sentences: SentenceReading[];
  best: SentenceReading | null;
}

/** Sentences read as one batch: enough to keep a step's patterns in the caches, few enough for a short stretch. */
const BATCH_SENTENCES = 64;

/** Whether a modal's subject names code strongly ("The auth middleware must …"). */
const surfaceSubject = (subject: string) => surfaceStrength(subject, scanWords(subject).surfaceNoun) === "strong";

/**
 * A batch of sentences read one step at a time, each step over the whole batch before the next, so a
 * step's patterns stay in the processor's caches instead of a hundred patterns taking turns per sentence.
 * Scores are still 0: scoring needs the sentences after.
 */
function readBatch(texts: readonly string[], first: number, counts: { words: number; functionWords: number }): SentenceReading[] {
  const scans = texts.map(scanWords);
  const directives = texts.map((text, i) => findDirective(text, scans[i]!.modal, surfaceSubject));
  const found = (family: CueGroup) => texts.map((text, i) => collect(family, text, scans[i]!.bits));
  const cues = CUE_GROUPS;
  const hedges = found(cues.hedges), followUps = found(cues.followUps), conditionals = found(cues.conditionals), reported = found(cues.reported);
  const measurable = found(cues.measurable), negations = found(cues.negations), placeholders = found(cues.placeholders);
  const inconclusive = found(cues.inconclusive), intel = found(cues.intel);
  // Surfaces and purpose count only where a recommendation is, or a hedged one may be (the
  // score of a sentence without a directive is never used): most sentences skip both.
  const purpose = texts.map((text, i) => (directives[i] ? collect(cues.purpose, text, scans[i]!.bits) : NO_CUES));
  const surfaces = texts.map((text, i): SurfaceStrength =>
    directives[i] || hedges[i]!.length + conditionals[i]!.length + reported[i]!.length > 0 ? surfaceStrength(text, scans[i]!.surfaceNoun) : "none",
  );
  return texts.map((text, i) => {
    const scan = scans[i]!;
    const directive = directives[i]!;
    counts.words += scan.words;
    counts.functionWords += scan.functionWords;
    const { verb, hedged } = verbOf(text, directive);
    const actionVerbs = scan.actionVerbs;
    if (verb && ACTION_VERBS.has(verb) && !actionVerbs.includes(verb)) actionVerbs.unshift(verb);
    // What the verb adds to the hedges and follow-ups found.
    const addedHedges: string[] = [];
    if (hedged && !hedges[i]!.some((h) => /consider|try/i.test(h))) addedHedges.push("consider");
    if (directive && verb && DEFERRAL_VERBS.has(verb)) addedHedges.push(`${directive.phrase} ${verb}`);
    const research = directive && verb && RESEARCH_VERBS.has(verb) && followUps[i]!.length === 0;
    return {
      index: first + i,
      text,
      directive,
      governedVerb: verb,
      actionVerbs,
      surface: surfaces[i]!,
      measurable: measurable[i]!,
      purpose: purpose[i]!,
      hedges: addedHedges.length > 0 ? [...hedges[i]!, ...addedHedges] : hedges[i]!,
      negations: negations[i]!,
      question: endsWithQuestion(text),
      placeholders: placeholders[i]!,
      inconclusive: inconclusive[i]!,
      intel: intel[i]!,
      followUps: research ? [`${directive.phrase} ${verb}`] : followUps[i]!,
      conditionals: conditionals[i]!,
      reported: reported[i]!,
      score: 0,
    };
  });
}

/**
 * Sentence-by-sentence reading of a research body, as steps: each `yield` is a point where the
 * caller may pause (after at most about SLICE_MS of work). The result does not depend
 * on where the pauses fall. `readResearch` runs the steps without pausing.
 */
export function* readingSteps(text: string): Generator<void, ResearchReading> {
  const normalised = normalise(text ?? "");
  const fenced = stripFences(normalised);
  const prose = boundTokens(fenced.prose);
  yield;
  const pieces = splitSentences(prose, true);
  yield;
  const sentences: SentenceReading[] = [];
  const counts = { words: 0, functionWords: 0 };
  let sliceStart = performance.now();
  for (let first = 0; first < pieces.length; first += BATCH_SENTENCES) {
    sentences.push(...readBatch(pieces.slice(first, first + BATCH_SENTENCES), first, counts));
    if (performance.now() - sliceStart > SLICE_MS) {
      yield;
      sliceStart = performance.now();
    }
  }
  yield;
  const best = scoreSentences(sentences);
  return { normalised, prose, hadFence: fenced.hadFence, wordCount: counts.words, functionWordCount: counts.functionWords, sentences, best };
}

/** The reading in one go (short texts, the CLI, tests). */
export function readResearch(text: string): ResearchReading {
  return runSteps(readingSteps(text));
}

const SURFACE_LISTS = new WeakMap<SentenceReading, string[]>();

/**
 * The code surfaces a sentence names, each once (the strong ones, or else the bare ones); empty where the
 * reading did not look. Listed on demand: only the action sentences' lists are ever read.
 */
export function surfacesOf(sentence: SentenceReading): string[] {
  if (sentence.surface === "none") return [];
  let list = SURFACE_LISTS.get(sentence);
  if (list === undefined) {
    list = surfacePhrases(sentence.text, scanWords(sentence.text).surfaceNoun);
    SURFACE_LISTS.set(sentence, list);
  }
  return list;
}
