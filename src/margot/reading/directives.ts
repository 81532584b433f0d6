// Where a sentence asks for something: a label ("Recommendation: …"), a recommendation verb first
// ("Recommend adding …"), an imperative ("Fix the …", also after "TL;DR:"), or a modal ("we should …");
// and the verb the directive governs ("be fixed", "consider moving"), in its base form.
import { ACTION_VERBS, DEFERRAL_VERBS, IRREGULAR_PARTICIPLES, NOUN_LIKE_VERBS, RESEARCH_VERBS, SKIPPABLE_ADVERBS, STRONG_SUBJECTS } from "./lexicon.js";
import { matchesOf } from "./surfaces.js";

export type DirectiveStrength = "strong" | "medium";

/** Where the instruction sits: `text.slice(start, end)` is `phrase`. */
export interface Directive {
  phrase: string;
  strength: DirectiveStrength;
  /** imperative: "Fix …"; label: "Recommendation: …", "Recommend adding …"; modal: "we should …". */
  kind: "imperative" | "label" | "modal";
  start: number;
  end: number;
}

/** Base form of an inflected verb when it is one we know ("moving" → "move", "dropped" → "drop"). */
export function baseVerb(word: string, known: ReadonlySet<string> = ACTION_VERBS): string | null {
  const w = word.toLowerCase();
  if (known.has(w)) return w;
  const irregular = IRREGULAR_PARTICIPLES[w];
  if (irregular && known.has(irregular)) return irregular;
  for (const suffix of ["ing", "ed", "es", "s", "d"]) {
    if (!w.endsWith(suffix) || w.length <= suffix.length + 1) continue;
    const stem = w.slice(0, -suffix.length);
    const candidates = [stem, `${stem}e`];
    if (stem.length > 2 && stem.at(-1) === stem.at(-2)) candidates.push(stem.slice(0, -1));
    if (stem.endsWith("i")) candidates.push(`${stem.slice(0, -1)}y`);
    for (const candidate of candidates) if (known.has(candidate)) return candidate;
  }
  return null;
}

const LABEL_DIRECTIVE =
  /^(?:the\s+|our\s+)?(?:recommendations?|recommended\s+(?:actions?|fix|change|next\s+steps?)|action(?:\s+items?)?|next\s+steps?|(?:suggested\s+|proposed\s+)?(?:fix|solution|remedy|change|action)|to\s*do|todo|proposal)\s*:\s*/i;
/** A sentence that opens with a recommendation verb: "Recommend adding …", "We suggest moving …". */
const RECOMMEND_LEAD = /^(?:we\s+|i\s+)?(?:(?:strongly\s+)?(?:recommend|suggest|propose|advise))(?:\s+that)?(?:\s+we|\s+you)?\b/i;
/** Any other short label before the body of a sentence ("TL;DR:", "Why:", "Update:"). */
const ANY_LABEL = /^[\w;'&/ -]{1,24}:\s+/;

export const MODAL =
  /\b(?:should|must|ought\s+to|(?:will\s+|'ll\s+)?needs?\s+to|ha(?:ve|s)\s+to|it\s+is\s+(?:critical|important|essential|necessary|urgent|imperative)\s+(?:that\s+we|to)|(?:i|we)\s+(?:strongly\s+)?recommend(?:\s+that)?(?:\s+we|\s+you)?|it\s+is\s+recommended\s+(?:that\s+(?:we\s+|you\s+)?|to)|the\s+(?:fix|next\s+step|remedy)\s+is\s+to)\b/gi;

/** Every MODAL match contains one of these words. */
export const MODAL_TRIGGERS = new Set([
  "should", "must", "ought", "need", "needs", "have", "has", "critical", "important", "essential", "necessary", "urgent", "imperative", "recommend",
  "recommended", "fix", "next", "remedy",
]);

const SELF_STRONG_MODAL = /recommend|critical|important|essential|necessary|urgent|imperative|fix|next\s+step|remedy/i;

/** A word after a directive, and how many of them are read for its verb. */
const VERB_WORD = /[A-Za-z][\w'-]*/g;
const VERB_WORDS_READ = 8;

/** The verb a directive governs: skips adverbs, reads "be fixed" and "consider moving"; words are read only as far as needed. */
function governedVerb(text: string, from: number): { verb: string | null; hedged: boolean } {
  VERB_WORD.lastIndex = from;
  let read = 0;
  const next = (): string | null => {
    const match = read < VERB_WORDS_READ ? VERB_WORD.exec(text) : null;
    // Past the last word the pattern would start again at the beginning.
    read = match ? read + 1 : VERB_WORDS_READ;
    return match ? match[0].toLowerCase() : null;
  };
  let hedged = false;
  let word = next();
  while (word !== null && SKIPPABLE_ADVERBS.has(word)) word = next();
  if (word === "consider" || word === "try") {
    hedged = true;
    word = next();
  }
  if (word === "be" || word === "get") word = next();
  if (word === null) return { verb: null, hedged };
  return { verb: baseVerb(word) ?? baseVerb(word, RESEARCH_VERBS) ?? baseVerb(word, DEFERRAL_VERBS), hedged };
}

function looksLikeObject(word: string | undefined): boolean {
  if (word === undefined) return false;
  return (
    /^(?:the|a|an|our|all|every|each|its|their|this|these|those|any|it|them|support|rate)$/i.test(word) ||
    /[A-Z]/.test(word.slice(1)) ||
    /[_./()`@]/.test(word) ||
    /^[A-Z]/.test(word)
  );
}

const NEXT_WORD = /^\s+([^\s]+)/;
const LEAD_WORD = /^(please\s+)?([A-Za-z][\w-]*)/i;

/**
 * The sentence's directive, if it has one. `modalWord`: whether it holds a word every MODAL match holds;
 * `surfaceSubject`: whether a modal's subject names code ("The auth middleware must …" is a strong directive).
 */
export function findDirective(sentence: string, modalWord: boolean, surfaceSubject: (subject: string) => boolean): Directive | null {
  // Both label patterns end in a colon, which most sentences do not have.
  const colon = sentence.includes(":");
  // "Recommendation: switch …" / "Action: add …"
  const label = colon ? LABEL_DIRECTIVE.exec(sentence) : null;
  // A bare "Recommended actions:" introduces the items below it; it is no instruction itself.
  if (label) {
    return sentence.slice(label[0].length).trim() === ""
      ? null
      : { phrase: label[0].trim(), strength: "strong", kind: "label", start: 0, end: label[0].length };
  }
  const recommend = RECOMMEND_LEAD.exec(sentence);
  if (recommend) return { phrase: recommend[0].trim(), strength: "strong", kind: "label", start: 0, end: recommend[0].length };
  // "TL;DR: bump …": read past a neutral label, then look for an imperative.
  const other = colon ? ANY_LABEL.exec(sentence) : null;
  if (other) {
    const inner = findDirective(sentence.slice(other[0].length), modalWord, surfaceSubject);
    if (inner?.kind === "imperative") return { ...inner, start: inner.start + other[0].length, end: inner.end + other[0].length };
  }

  // Imperative: an action verb first ("Fix the …", "Please rotate …").
  const lead = LEAD_WORD.exec(sentence);
  const verb = lead?.[2];
  if (lead && verb !== undefined) {
    const first = verb.toLowerCase();
    const isLabel = sentence.startsWith(":", lead[0].length);
    // The word after is read only for a noun-like verb ("Track"), the rare case.
    const objectNext = () => NEXT_WORD.exec(sentence.slice(lead[0].length))?.[1];
    if (ACTION_VERBS.has(first) && !isLabel && (!NOUN_LIKE_VERBS.has(first) || looksLikeObject(objectNext()))) {
      return { phrase: verb, strength: "strong", kind: "imperative", start: lead[0].length - verb.length, end: lead[0].length };
    }
  }

  let best: Directive | null = null;
  if (!modalWord) return null;
  for (const match of matchesOf(MODAL, sentence)) {
    const start = match.index ?? 0;
    const before = sentence.slice(0, start);
    const subject = before.slice(Math.max(before.lastIndexOf(","), before.lastIndexOf(":")) + 1);
    const strong = SELF_STRONG_MODAL.test(match[0]) || STRONG_SUBJECTS.test(subject.split(/\s+/).slice(-4).join(" ")) || surfaceSubject(subject);
    const find: Directive = {
      phrase: match[0],
      strength: strong ? "strong" : "medium",
      kind: "modal",
      start,
      end: start + match[0].length,
    };
    if (!best || (best.strength === "medium" && find.strength === "strong")) best = find;
  }
  return best;
}

/** The verb a directive governs and whether it is hedged ("consider moving"): an imperative is its own verb. */
export function verbOf(text: string, directive: Directive | null): { verb: string | null; hedged: boolean } {
  if (!directive) return { verb: null, hedged: false };
  if (directive.kind === "imperative") return { verb: baseVerb(directive.phrase) ?? directive.phrase.toLowerCase(), hedged: false };
  return governedVerb(text, directive.end);
}
