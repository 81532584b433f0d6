// One reading of a Margot research body: normalised once, cut into sentences once, each sentence
// read once for the cues `classify` weighs and `extract` draws from (directive, governed verb,
// surfaces, outcomes, hedges, negations, questions, …). Pure; see classify.ts for what the cues mean.
import { runSteps, SLICE_MS } from "./text-slices.js";
import { isSpace } from "./token-matches.js";
import { FNV1A_SEED, fnv1aStep } from "./fnv1a.js";
import { foldAscii, WordTable } from "./word-table.js";
import { ACTION_VERBS, NOUN_LIKE_VERBS, RESEARCH_VERBS, DEFERRAL_VERBS, IRREGULAR_PARTICIPLES, SKIPPABLE_ADVERBS, STRONG_SUBJECTS, SURFACE_NOUNS, STOPWORD_MODIFIERS, FRAMEWORK_DOT_JS, FUNCTION_WORDS } from "./lexicon.js";

export type DirectiveStrength = "strong" | "medium";

/** "strong": a file, endpoint, identifier, … or a surface noun with modifiers ("the Stripe webhook handler"); "bare": only a bare one ("the webhook"). */
export type SurfaceStrength = "strong" | "bare" | "none";

/** Where the instruction sits: `text.slice(start, end)` is `phrase`. */
export interface Directive {
  phrase: string;
  strength: DirectiveStrength;
  /** imperative: "Fix …"; label: "Recommendation: …", "Recommend adding …"; modal: "we should …". */
  kind: "imperative" | "label" | "modal";
  start: number;
  end: number;
}

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
  /** 0..0.98 before rounding. */
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

// ---------------------------------------------------------------- cue patterns

/**
 * A family of cue patterns, compiled once. `triggers`: words (lower case) of which every match
 * contains at least one, so a sentence without any of them skips the family untested; "#digit"
 * stands for any token with a digit. This is what keeps the reading near-linear and fast.
 */
interface CueGroup {
  readonly patterns: readonly RegExp[];
  /** One case-insensitive union of the patterns: a superset, tested before the members. */
  readonly any: RegExp;
  /**
   * Every pattern is case-insensitive (and has no other flag): the union then matches exactly where
   * one of them does, so no pattern matches before the union's first match, and each starts there.
   */
  readonly exact: boolean;
  readonly bit: number;
}

const TRIGGERS = new Map<string, number>();
const DIGIT_TRIGGERS = { bits: 0 };
let nextBit = 1;

function cueGroup(patterns: readonly RegExp[], triggers: readonly string[]): CueGroup {
  const bit = nextBit;
  nextBit <<= 1;
  for (const word of triggers) {
    if (word === "#digit") DIGIT_TRIGGERS.bits |= bit;
    else TRIGGERS.set(word, (TRIGGERS.get(word) ?? 0) | bit);
  }
  return {
    patterns: patterns.map((p) => (p.flags.includes("g") ? p : new RegExp(p.source, `${p.flags}g`))),
    any: new RegExp(patterns.map((p) => `(?:${p.source})`).join("|"), "i"),
    exact: patterns.every((p) => p.flags.replace("g", "") === "i"),
    bit,
  };
}

/** Flags beside the cue bits in flagsOf() (the cue groups use the low bits). */
const ACTION_WORD = 1 << 24;
const FUNCTION_WORD = 1 << 25;
const MODAL_WORD = 1 << 26;
const SURFACE_WORD = 1 << 27;
const CUE_BITS = ACTION_WORD - 1;

let wordFlags: Map<string, number> | null = null;

/** Every word the reading looks up, with all it is (cue triggers, action verb, …): one lookup per token. Built on first use, after the lexicon. */
function flagsOf(): Map<string, number> {
  if (wordFlags) return wordFlags;
  const flags = new Map(TRIGGERS);
  const mark = (words: Iterable<string>, flag: number) => {
    for (const word of words) flags.set(word, (flags.get(word) ?? 0) | flag);
  };
  mark(ACTION_VERBS, ACTION_WORD);
  mark(FUNCTION_WORDS, FUNCTION_WORD);
  mark(MODAL_TRIGGERS, MODAL_WORD);
  mark(SURFACE_FIRST_WORDS, SURFACE_WORD);
  wordFlags = flags;
  return flags;
}

/** What one pass over a sentence's tokens finds. */
export interface TokenScan {
  words: number;
  bits: number;
  actionVerbs: string[];
  functionWords: number;
  modal: boolean;
  surfaceNoun: boolean;
}

/**
 * One pass over a sentence's words: read in place where its letters are ASCII (almost every sentence),
 * else through its lower-cased tokens (`scanWordsGeneral`). The tokens are not kept: only their count is read.
 */
export function scanWords(text: string): TokenScan {
  return scanInPlace(text) ?? scanWordsGeneral(text);
}

/** The scan through the sentence's lower-cased tokens, for any text (exported to test `scanWords` against). */
export function scanWordsGeneral(text: string): TokenScan {
  return scanTokens(tokensOf(text), DIGIT.test(text));
}

let wordTable: WordTable | null = null;
/** The cue bits of a word that ends in "n't" (TRIGGERS' "#n't"), read with the table, once every cue group exists. */
let notSuffixBits = 0;

const APOSTROPHE = 39;
const HYPHEN = 45;

function isAsciiLetter(code: number): boolean {
  return ((code | 0x20) - 97) >>> 0 < 26;
}

/** Whether the word `text.slice(start, end)` ends in "n't", any case (the word is at least one letter before it). */
function endsWithNot(text: string, start: number, end: number): boolean {
  return end - start >= 3 && (text.charCodeAt(end - 1) | 0x20) === 116 && text.charCodeAt(end - 2) === APOSTROPHE && (text.charCodeAt(end - 3) | 0x20) === 110;
}

/** Whether the word `text.slice(start, end)` starts with "codepath", any case. */
function startsWithCodepath(text: string, start: number, end: number): boolean {
  return end - start >= 8 && (text.charCodeAt(start) | 0x20) === 99 && text.slice(start, start + 8).toLowerCase() === "codepath";
}

/** Per UTF-16 code unit above ASCII: 1 when lower-casing leaves it as it is and it is no word letter (a dash, an arrow, a quote), 2 when not; 0 not yet known. */
const OTHER_UNITS = new Uint8Array(0x10000);

/**
 * Whether a non-ASCII code unit only separates words, before lower-casing and after: it lower-cases to itself
 * and is not in LOWER_TOKEN. A surrogate is (an astral character is no word letter, nor is its lower case).
 */
function separatesWords(code: number): boolean {
  let kind = OTHER_UNITS[code]!;
  if (kind === 0) {
    const unit = String.fromCharCode(code);
    kind = unit.toLowerCase() === unit && !(code >= 0xc0 && code <= 0x24f) ? 1 : 2;
    OTHER_UNITS[code] = kind;
  }
  return kind === 1;
}

/**
 * `scanTokens(tokensOf(text), DIGIT.test(text))`, each word looked up where it stands: over ASCII letters,
 * LOWER_TOKEN's words are the runs of letters, `'` and `-` that start with a letter, and the other
 * characters met must only separate words; null at the first that may not, for the general path.
 */
function scanInPlace(text: string): TokenScan | null {
  if (wordTable === null) {
    wordTable = new WordTable(flagsOf());
    notSuffixBits = TRIGGERS.get("#n't") ?? 0;
  }
  const table = wordTable;
  const scan: TokenScan = { words: 0, bits: 0, actionVerbs: [], functionWords: 0, modal: false, surfaceNoun: false };
  let hasDigit = false;
  const length = text.length;
  for (let i = 0; i < length; ) {
    const code = text.charCodeAt(i);
    if (code >= 0x80 && !separatesWords(code)) return null;
    if (!isAsciiLetter(code)) {
      if (code >= 48 && code <= 57) hasDigit = true;
      i++;
      continue;
    }
    const start = i;
    let hash = FNV1A_SEED;
    // Never read past the end (a NaN there would make the loop's numbers floating point).
    for (; i < length; i++) {
      const next = text.charCodeAt(i);
      if (!isAsciiLetter(next) && next !== APOSTROPHE && next !== HYPHEN) break;
      hash = fnv1aStep(hash, foldAscii(next));
    }
    scan.words++;
    const f = table.get(text, start, i, hash);
    scan.bits |= f & CUE_BITS;
    if (endsWithNot(text, start, i)) scan.bits |= notSuffixBits;
    if (f & ACTION_WORD) {
      const token = text.slice(start, i).toLowerCase();
      if (!scan.actionVerbs.includes(token)) scan.actionVerbs.push(token);
    }
    if (f & FUNCTION_WORD) scan.functionWords++;
    if (f & MODAL_WORD) scan.modal = true;
    if (f & SURFACE_WORD || startsWithCodepath(text, start, i)) scan.surfaceNoun = true;
  }
  if (hasDigit) scan.bits |= DIGIT_TRIGGERS.bits;
  return scan;
}

function scanTokens(tokens: readonly string[], hasDigit: boolean): TokenScan {
  const flags = flagsOf();
  const scan: TokenScan = { words: tokens.length, bits: hasDigit ? DIGIT_TRIGGERS.bits : 0, actionVerbs: [], functionWords: 0, modal: false, surfaceNoun: false };
  for (const token of tokens) {
    const f = flags.get(token) ?? 0;
    scan.bits |= f & CUE_BITS;
    if (token.endsWith("n't")) scan.bits |= TRIGGERS.get("#n't") ?? 0;
    if (f & ACTION_WORD && !scan.actionVerbs.includes(token)) scan.actionVerbs.push(token);
    if (f & FUNCTION_WORD) scan.functionWords++;
    if (f & MODAL_WORD) scan.modal = true;
    if (f & SURFACE_WORD || token.startsWith("codepath")) scan.surfaceNoun = true;
  }
  return scan;
}

/** What most families find in most sentences, one list for all of them (a list per family and sentence was most of the reading's arrays). */
const NO_CUES: readonly string[] = Object.freeze([]);

function collect(group: CueGroup, text: string, bits: number): readonly string[] {
  if ((bits & group.bit) === 0) return NO_CUES;
  const first = group.exact ? (group.any.exec(text)?.index ?? -1) : group.any.test(text) ? 0 : -1;
  if (first < 0) return NO_CUES;
  const found: string[] = [];
  for (const pattern of group.patterns) {
    pattern.lastIndex = first;
    for (let match = pattern.exec(text); match !== null; match = pattern.exec(text)) {
      if (match[0] === "") pattern.lastIndex++;
      addPhrase(found, match[0]);
    }
  }
  return found;
}

/** Whitespace that collapsing to single spaces would change (most phrases have none). */
const UNCOLLAPSED = /\s\s|[^\S ]/;

/** Adds a matched phrase, trimmed and its whitespace collapsed, unless the list has it in some case already. */
function addPhrase(list: string[], match: string): void {
  const trimmed = match.trim();
  const phrase = UNCOLLAPSED.test(trimmed) ? trimmed.replace(/\s+/g, " ") : trimmed;
  if (phrase === "") return;
  const lower = phrase.toLowerCase();
  if (!list.some((p) => p.toLowerCase() === lower)) list.push(phrase);
}


// Negation of the directive itself, not any "not" ("the parser does not expect …" is a fact).
const NEGATIONS = cueGroup([
  /\b(?:should|must|ought|need)\s*(?:not|n't)\b/gi,
  /\b(?:shouldn't|mustn't|needn't)\b/gi,
  /\b(?:do|does|did|will|would)\s*(?:not|n't)\s+(?:need\s+to|have\s+to|require)\b/gi,
  /\b(?:don't|doesn't|didn't|won't)\s+(?:need\s+to|have\s+to|require)\b/gi,
  /\bno\s+need\s+to\b/gi,
  /\bno\s+(?:action|changes?|work|fix|update|migration)\s+(?:is\s+|are\s+)?(?:needed|required|necessary|warranted)\b/gi,
  /\bnot\s+(?:necessary|required|needed|warranted)\b/gi,
  /\bnothing\s+(?:to\s+(?:change|fix|do)|needs\s+to\s+(?:change|be\s+done))\b/gi,
  /^\s*(?:do\s+not|don't|never)\b/gi,
], ["#n't", "not", "no", "nothing", "never"]);

const HEDGES = cueGroup([
  /\bcould\s+(?:potentially\s+|possibly\s+|also\s+)?(?:consider|look|add|move|use|try|explore|switch|be)\b/gi,
  /\bwe\s+could\b/gi,
  /\bmight\s+(?:be\s+worth|want\s+to|consider|help|be\s+(?:nice|good|useful))\b/gi,
  /\bmay\s+(?:be\s+worth|want\s+to|consider|help|not\s+justify)\b/gi,
  /\b(?:is|be|seems?)\s+worth\s+(?:\w+ing|a\s+look|considering|exploring)\b/gi,
  /\bperhaps\b/gi,
  /\bpossibly\b/gi,
  /\bmaybe\b/gi,
  /\boptionally\b/gi,
  /\bideally\b/gi,
  /\bat\s+some\s+point\b/gi,
  /\beventually\b/gi,
  /\bin\s+(?:a\s+|the\s+)?future\s+(?:quarter|release|iteration)s?\b/gi,
  /\bnice\s+to\s+have\b/gi,
  /\bno\s+urgency\b/gi,
  /\bnot\s+urgent\b/gi,
  /^\s*consider\s+\w+/gi,
  /\bwhether\b/gi,
  /\bit\s+would\s+be\s+(?:nice|good|worth|useful)\b/gi,
], ["could", "might", "may", "worth", "perhaps", "possibly", "maybe", "optionally", "ideally", "point", "eventually", "future", "nice", "urgency", "urgent", "consider", "whether", "would"]);

const CONDITIONALS = cueGroup([/^\s*(?:if|unless|once|when|should\s+\w+\s+(?:grow|rise|increase))\b[^,]*,?/gi, /\b(?:if|unless)\s+\w+(?:\s+\w+)?\s+(?:rises?|grows?|increases?|exceeds?|drops?|falls?|becomes?)\b/gi], ["if", "unless", "once", "when", "grow", "rise", "increase"]);

const REPORTED = cueGroup([
  /\baccording\s+to\b/gi,
  // "Apple says developers should …": a named third party giving the advice.
  /\b(?!(?:We|I|You|Our|This|That|It)\b)[A-Z][\w.'-]*(?:\s+[A-Z][\w.'-]*){0,3}\s+(?:say|says|said|recommend|recommends|recommended|advise|advises|suggest|suggests|state|states|warn|warns|claim|claims)\b(?!\s*:)/g,
  /\b(?:docs?|documentation|guides?|guidance|blog\s+posts?|posts?|articles?|sessions?|talks?|surveys?|vendors?|teams|people|they|others|sources?|analysts?)\s+(?:say|says|recommend|recommends|suggest|suggests|note|notes|state|states|report|reports|claim|claims|advise|advises)\b/gi,
], ["according", "say", "says", "said", "recommend", "recommends", "recommended", "advise", "advises", "suggest", "suggests", "state", "states", "warn", "warns", "claim", "claims", "note", "notes", "report", "reports"]);

const FOLLOW_UPS = cueGroup([
  /\b(?:another|a\s+further|a\s+second|a\s+deeper|more)\s+(?:deep[- ]?dive|research|round\s+of\s+research|pass|investigation)\b/gi,
  /\bdeep[- ]?dive\b/gi,
  /\bresearch\s+(?:this\s+|it\s+)?(?:further|more|deeper)\b/gi,
  /\bfurther\s+(?:research|investigation|analysis|study)\b/gi,
  /\binvestigate\s+(?:this\s+|it\s+)?(?:further|more|deeper)\b/gi,
  /\bdig\s+(?:deeper|further)\b/gi,
  /\bexplore\s+(?:this\s+|it\s+)?further\b/gi,
  /\bcome\s+back\s+with\s+(?:a\s+)?recommendations?\b/gi,
  /\bneed\s+more\s+(?:data|evidence|information|research)\b/gi,
  /\bre-?run\s+(?:the\s+)?research\b/gi,
  /\bfollow[- ]up\s+(?:research|study|investigation|deep[- ]?dive)\b/gi,
], ["deep-dive", "deepdive", "deep", "dive", "research", "further", "investigation", "investigate", "dig", "explore", "recommendation", "recommendations", "more", "rerun", "re-run", "follow-up", "follow"]);

const INTEL = cueGroup([
  /\bwhat'?s\s+(?:the\s+)?(?:latest|new)\b/gi,
  /\b(?:released|announced|launched|shipped|published)\b/gi,
  /\b(?:is|are)\s+(?:now\s+)?(?:out|available|generally\s+available|in\s+beta)\b/gi,
  /\bnow\s+supports?\b/gi,
  /\brelease\s+notes?\b/gi,
  /\bchangelog\b/gi,
  /\b(?:market|competitors?|competitive|landscape|segment)\b/gi,
  /\bpricing\s+(?:pages?|research|trends?)\b/gi,
  /\braised\s+(?:the\s+|its\s+)?prices?\b/gi,
  /\b(?:survey|adoption|telemetry|filings?|IPO)\b/gi,
], ["what's", "whats", "released", "announced", "launched", "shipped", "published", "out", "available", "beta", "supports", "support", "release", "changelog", "market", "competitor", "competitors", "competitive", "landscape", "segment", "pricing", "raised", "survey", "adoption", "telemetry", "filing", "filings", "ipo"]);

const MEASURABLE = cueGroup([
  /\d+(?:\.\d+)?\s?%/gi,
  /\b\d+(?:[.,]\d+)?\s?(?:ms|s|sec|secs|seconds?|minutes?|mins?|hours?|hrs?|days?|weeks?|KB|MB|GB|TB|px|x)\b/gi,
  /\bfrom\s+[^,.;]{0,30}?\d[^,;]{0,20}?\s+to\s+(?:under\s+|below\s+|above\s+|over\s+|less\s+than\s+|near\s+)?[^,;\s]+/gi,
  /\b(?:to|at|target:?)\s+(?:0|zero|near\s+zero)\b/gi,
  /\b(?:under|below|above|over|less\s+than|more\s+than|at\s+most|at\s+least|within|fewer\s+than)\s+\$?\d[\d.,]*/gi,
  /\bby\s+(?:about\s+|roughly\s+|around\s+)?\d[\d.,]*\s?%?/gi,
  /\b\d[\d,]*\s+(?:requests?|errors?|failures?|retries|events?|users?|tickets?)\s+(?:per|a|an|each)\s+\w+/gi,
  /\bp(?:50|75|90|95|99)\b/gi,
  /\bdrops?\s+to\s+zero\b/gi,
  // A stated expected outcome is the seed's "measurable state change" even without a number.
  /\bexpected\s+(?:outcome|result|impact|effect)s?\b/gi,
  /\b(?:should|will|would)\s+(?:then\s+)?(?:disappear|go\s+away|vanish|stop\s+\w+ing|close)\b/gi,
], ["#digit", "zero", "expected", "disappear", "away", "vanish", "stop", "close"]);

/** Text standing in for a finding that is not there yet. */
const PLACEHOLDERS = cueGroup([
  /\bTODO\b/g,
  /\bTBD\b/gi,
  /\[[^\]\n]{0,60}\b(?:insert|add|added|summary|findings?|recommendations?|tbd|todo|placeholder)\b[^\]\n]{0,60}\]/gi,
  /\bgoes\s+here\b/gi,
  /\bcoming\s+soon\b/gi,
  // "placeholder entry", a text that opens with it; not a UI skeleton placeholder.
  /\bplaceholder\s+(?:entry|text|summary|findings?|content|only)\b|^\s*placeholder\b/gi,
  /\blorem\s+ipsum\b/gi,
  /\bto\s+be\s+(?:determined|added|written|confirmed)\b/gi,
], ["todo", "tbd", "insert", "add", "added", "summary", "finding", "findings", "recommendation", "recommendations", "placeholder", "here", "soon", "lorem", "determined", "written", "confirmed"]);

/** Findings that do not settle anything: inconclusive, contradictory, or too thin to say. */
const INCONCLUSIVE = cueGroup([
  /\binconclusive\b/gi,
  /\b(?:still\s+|remains?\s+)?unclear\b/gi,
  /\bnot\s+(?:yet\s+)?clear\b/gi,
  /\bno\s+clear\s+(?:recommendation|answer|winner|conclusion|consensus|signal|cause)\b/gi,
  /\bno\s+consensus\b/gi,
  /\b(?:could|can)\s*(?:not|n't)\s+(?:determine|reproduce|confirm|tell|say|conclude)\b/gi,
  /\bcannot\s+(?:determine|reproduce|confirm|tell|say|conclude)\b/gi,
  /\b(?:sources|results|benchmarks|experiments|studies|reports)\s+(?:disagree|conflict|contradict)\b/gi,
  /\b(?:contradict\s+each\s+other|conflicting\s+(?:guidance|results|evidence|sources|advice)|contradictory|mixed\s+results|inconsistent\s+results)\b/gi,
  /\bpoints?\s+both\s+ways\b/gi,
  /\b(?:not\s+enough|insufficient)\s+(?:data|evidence|information)\b/gi,
  /\bdoes\s*(?:not|n't)\s+favou?r\s+any\b/gi,
  /\bambiguous\b/gi,
], ["inconclusive", "unclear", "clear", "consensus", "not", "#n't", "cannot", "disagree", "conflict", "contradict", "conflicting", "contradictory", "mixed", "inconsistent", "both", "enough", "insufficient", "favour", "favor", "ambiguous"]);

const PURPOSE = cueGroup([
  /\bso\s+that\b/gi,
  /\bin\s+order\s+to\b/gi,
  /\b(?:to|which\s+will|which\s+should|reducing|cutting|eliminating)\s+(?:prevent|avoid|stop|eliminate|ensure|reduce|cut|lower|improve|bring|keep|free|make\s+sure|speed\s+up|fix)\b/gi,
  /\b(?:reducing|cutting|eliminating|preventing|lowering)\b/gi,
  /\b(?:latency|error\s+rate|failure\s+rate|throughput|uptime|TTFB|LCP|INP|CLS|conversion)\b/gi,
], ["so", "order", "prevent", "avoid", "stop", "eliminate", "ensure", "reduce", "cut", "lower", "improve", "bring", "keep", "free", "make", "speed", "fix", "reducing", "cutting", "eliminating", "preventing", "lowering", "latency", "error", "rate", "throughput", "uptime", "ttfb", "lcp", "inp", "cls", "conversion"]);

/** A run that produced no finding: "Margot could not complete this research: …". */
export const RESEARCH_FAILED =
  /\b(?:could\s+not|couldn't|was\s+unable\s+to|unable\s+to|failed\s+to)\s+(?:complete|finish|find|access|retrieve|fetch|load|reach)\b|\b(?:research|request|run)\s+(?:timed\s+out|failed|was\s+cancel+ed)\b/i;

// ---------------------------------------------------------------- text shaping

const ABBREVIATION = /\b(e\.g|i\.e|etc|vs|approx|incl|cf|Inc|Ltd|Pty|No|Dr|Mr|Ms|Mrs|St)\./g;
const DOT_MASK = "\u2024";

function normalise(text: string): string {
  // One pass finds whether there is anything to replace at all (usually there is not).
  if (!/[\r\u2018\u2019\u201C\u201D\u00A0]/.test(text)) return text;
  // Each replace only where its characters occur (a pass over a large body costs).
  let out = text;
  if (out.includes("\r")) out = out.replace(/\r\n?/g, "\n");
  if (/[\u2018\u2019]/.test(out)) out = out.replace(/[\u2018\u2019]/g, "'");
  if (/[\u201C\u201D]/.test(out)) out = out.replace(/[\u201C\u201D]/g, '"');
  if (out.includes("\u00A0")) out = out.replaceAll("\u00A0", " ");
  return out;
}

const FENCE = "```";

/**
 * Fenced code cut out, each block replaced by a line end: what `/```[^\n]*\n[\s\S]*?(?:```|$)/g` matches (a
 * fence, the rest of its line, up to the next fence or the end), found with indexOf. The pattern was tried again
 * from every backtick of a line with no line end after it: a run of backticks took seconds per 60 KB.
 */
function stripFences(text: string): { prose: string; hadFence: boolean } {
  const kept: string[] = [];
  let from = 0;
  for (let open = text.indexOf(FENCE); open >= 0; open = text.indexOf(FENCE, from)) {
    const lineEnd = text.indexOf("\n", open + FENCE.length);
    // No line end after this fence: none after any later one either.
    if (lineEnd < 0) break;
    const close = text.indexOf(FENCE, lineEnd + 1);
    kept.push(text.slice(from, open), "\n");
    from = close < 0 ? text.length : close + FENCE.length;
  }
  if (kept.length === 0) return { prose: text, hadFence: false };
  kept.push(text.slice(from));
  return { prose: kept.join(""), hadFence: true };
}

/** Longest token and sentence read: real ones are far shorter, and the bounds keep every pattern linear. */
export const MAX_TOKEN_LENGTH = 200;
export const MAX_SENTENCE_LENGTH = 1000;
const DIGIT = /\d/;
// The lookbehind starts a try only where a token starts (linear, not a try at every character).
const LONG_TOKEN = new RegExp(String.raw`(?<!\S)\S{${MAX_TOKEN_LENGTH + 1},}`, "g");

function boundTokens(text: string): string {
  // A token too long (almost never) covers one of every (MAX_TOKEN_LENGTH + 1)th character: only the tokens there are measured.
  for (let at = MAX_TOKEN_LENGTH; at < text.length; at += MAX_TOKEN_LENGTH + 1) {
    if (isSpace(text.charCodeAt(at))) continue;
    let start = at;
    while (start > 0 && !isSpace(text.charCodeAt(start - 1))) start--;
    let end = at + 1;
    while (end < text.length && !isSpace(text.charCodeAt(end))) end++;
    if (end - start > MAX_TOKEN_LENGTH) return text.replace(LONG_TOKEN, (token) => token.slice(0, MAX_TOKEN_LENGTH));
  }
  return text;
}

function boundSentence(sentence: string): string {
  if (sentence.length <= MAX_SENTENCE_LENGTH) return sentence;
  const cut = sentence.slice(0, MAX_SENTENCE_LENGTH);
  const space = cut.lastIndexOf(" ");
  return space > MAX_SENTENCE_LENGTH / 2 ? cut.slice(0, space) : cut;
}

const LINE_MARKER = /^\s*(?:#{1,6}\s+|>\s*|[-*+\u2022]\s+|\d{1,3}[.)]\s+)/;
/** A line that ends a sentence or introduces what follows: the next line starts a new block. */
const FINISHED = /[.!?:]$/;

/**
 * Cut text into sentences: blocks by line structure, then on sentence punctuation and contrast markers.
 * `prose`: the text is a reading's prose, already normalised and with its tokens bounded.
 */
export function splitSentences(text: string, prose = false): string[] {
  const blocks: string[] = [];
  let current = "";
  // What `current` ends with, known without reading it (a test of a joined string copies it whole).
  let currentFinished = false;
  let currentIsHeading = false;
  for (const raw of (prose ? text : normalise(text)).split("\n")) {
    const line = raw.trim();
    if (line === "") {
      if (current) blocks.push(current);
      current = "";
      continue;
    }
    const startsItem = LINE_MARKER.test(raw);
    // Each replace only where it has something to remove (a marker on the trimmed line is one on the raw line).
    const unmarked = startsItem ? line.replace(LINE_MARKER, "") : line;
    const cleaned = (unmarked.includes("**") || unmarked.includes("__") ? unmarked.replace(/\*\*|__/g, "") : unmarked).trim();
    // A hard-wrapped paragraph continues on the next line; items, headings and finished sentences do not.
    if (startsItem || current === "" || currentIsHeading || currentFinished) {
      if (current) blocks.push(current);
      current = cleaned;
    } else {
      current = `${current} ${cleaned}`;
    }
    currentFinished = FINISHED.test(cleaned);
    currentIsHeading = /^#{1,6}\s/.test(line);
  }
  if (current) blocks.push(current);

  const sentences: string[] = [];
  for (const block of prose ? blocks : blocks.map(boundTokens)) {
    const masked = block.replace(ABBREVIATION, (m) => m.replace(/\./g, DOT_MASK));
    const hasMask = masked.includes(DOT_MASK);
    for (const piece of masked.split(/(?<=[.!?])["')\]]*\s+|;\s+|,\s+(?=(?:but|however|although|whereas)\b)/i)) {
      const sentence = boundSentence((hasMask ? piece.replaceAll(DOT_MASK, ".") : piece).trim());
      if (sentence) sentences.push(sentence);
    }
  }
  return sentences;
}

/** Word tokens for the cue triggers: ASCII and Latin letters (fast; the cues are English). */
const LOWER_TOKEN = /[a-z\u00C0-\u024F][a-z\u00C0-\u024F'-]*/g;

export function words(text: string): string[] {
  return text.match(/\p{L}[\p{L}'-]*/gu) ?? [];
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

// ---------------------------------------------------------------- surfaces and outcomes

/** A dot followed by a word start: what file, dotfile and event surfaces all contain (a sentence's final dot is not one). */
const INNER_DOT = /\.[A-Za-z_]/;
/** What an identifier surface without an underscore contains (camelCase, PascalCase). */
const CAMEL_HUMP = /[a-z][A-Z]/;

/** `needs`: a cheap test without which the pattern cannot match (most sentences skip most patterns); `innerDot`: INNER_DOT, tested once. */
const SURFACE_PATTERNS: { kind: string; pattern: RegExp; needs: (s: string, innerDot: boolean) => boolean }[] = [
  { kind: "path", pattern: /(?<![\w@])(?:[\w.@[\]-]+\/)+[\w.[\]-]+\.(?:tsx?|jsx?|mjs|cjs|py|swift|kt|java|rb|go|rs|sql|json|ya?ml|toml|css|scss|html|md|prisma|sh)\b/g, needs: (s) => s.includes("/") },
  { kind: "file", pattern: /(?<![\w/.-])[\w-]+\.(?:tsx?|jsx?|mjs|cjs|py|swift|kt|java|rb|go|rs|sql|json|ya?ml|toml|prisma|sh)\b/g, needs: (_, innerDot) => innerDot },
  { kind: "dotfile", pattern: /(?<![\w/])\.(?:env[\w.*-]*|gitignore|github|npmrc|vercel)\b/g, needs: (_, innerDot) => innerDot },
  { kind: "endpoint", pattern: /(?<![\w.:/@-])\/[a-z][\w-]*(?:\/[\w{}[\]:.-]+)*/g, needs: (s) => s.includes("/") },
  { kind: "code", pattern: /`[^`\n]{2,80}`/g, needs: (s) => s.includes("`") },
  { kind: "call", pattern: /\b[A-Za-z_][\w.]*\(\)/g, needs: (s) => s.includes("()") },
  { kind: "identifier", pattern: /\b[a-z]+(?:[A-Z][a-z0-9]+)+\b|\b[A-Z][a-z0-9]+(?:[A-Z][a-z0-9]+){1,}\b(?=\.\w+\b|\(|\s+(?:in|class|struct|component|module|service|view|screen))|\b[a-z][a-z0-9]*(?:_[a-z0-9]+)+\b|\b[A-Z][A-Z0-9]*(?:_[A-Z0-9]+){2,}\b/g, needs: (s) => s.includes("_") || CAMEL_HUMP.test(s) },
  { kind: "package", pattern: /(?<![\w/])@?[a-z][\w.-]*(?:\/[\w.-]+)?@\d[\w.-]*|(?<![\w/])@[a-z][\w.-]*\/[\w.-]+/g, needs: (s) => s.includes("@") },
  { kind: "event", pattern: /\b[a-z]+\.[a-z_]+(?:\.[a-z_]+)*\b(?=[\s,.;)]|$)/g, needs: (_, innerDot) => innerDot },
];

/**
 * The alternatives of a case-insensitive pattern grouped by first letter, in their order: the same
 * matches, one letter test per group instead of a test per alternative. Each alternative starts with a letter.
 */
function byFirstLetter(alternatives: string): string {
  const groups = new Map<string, string[]>();
  for (const alternative of alternatives.split("|")) {
    const letter = alternative.charAt(0).toLowerCase();
    groups.set(letter, [...(groups.get(letter) ?? []), alternative.slice(1)]);
  }
  return [...groups].map(([letter, rests]) => `${letter}(?:${rests.join("|")})`).join("|");
}
const SURFACE_NOUN = byFirstLetter(SURFACE_NOUNS);

/** A run of surface nouns ("webhook handler", "code path"). */
const SURFACE_NOUN_RUN = new RegExp(String.raw`\b(?:${SURFACE_NOUN})(?:\s+(?:${SURFACE_NOUN}))*\b`, "gi");
const BARE_SURFACE = new RegExp(String.raw`\b(?:the|our|its)\s+(?:${SURFACE_NOUN})\b`, "gi");
/** A token that can start a surface noun: without one, both patterns above are skipped. */
const SURFACE_FIRST_WORDS: ReadonlySet<string> = new Set(SURFACE_NOUNS.split("|").flatMap((alternative) => spellings(alternative.split(" ")[0] ?? "")));

/** Every spelling of a simple pattern word: "webhooks?" → webhook, webhooks; "repo(?:sitory)?" → repo, repository. */
function spellings(pattern: string): string[] {
  const optional = /^(.*?)(\(\?:([^()|]*)\)|([a-z]))\?(.*)$/.exec(pattern);
  if (!optional) return [pattern];
  const [, head = "", , group, char, tail = ""] = optional;
  return spellings(`${head}${tail}`).concat(spellings(`${head}${group ?? char ?? ""}${tail}`));
}

function tokensOf(text: string): string[] {
  return text.toLowerCase().match(LOWER_TOKEN) ?? [];
}

/** A word that may modify a surface noun, unless it is a number. */
const MODIFIER = /^[A-Za-z0-9][\w.'-]*$/;
const NUMBER = /^\d+$/;

const EVENT_FALSE_POSITIVES = /^(?:e\.g|i\.e|vs\.)|\.(?:js|ts|com|io|app|dev|net|org)$/i;

/** The matches of a global pattern, like `matchAll` without its copy of the pattern per call (a hot cost here). */
function matchesOf(pattern: RegExp, text: string): RegExpExecArray[] {
  const found: RegExpExecArray[] = [];
  pattern.lastIndex = 0;
  for (let match = pattern.exec(text); match !== null; match = pattern.exec(text)) {
    if (match[0] === "") pattern.lastIndex++;
    found.push(match);
  }
  return found;
}

/**
 * Visits a sentence's code surfaces in order until `visit` returns true: the specific ones (paths, files,
 * identifiers, …, then surface nouns with modifiers) and, only when there is none of those, the bare surface
 * nouns. Returns the strength of what it found (stopping at the first is enough for a score).
 */
function visitSurfaces(sentence: string, nouns: boolean, visit: (phrase: string) => boolean): SurfaceStrength {
  let strong = false;
  const innerDot = INNER_DOT.test(sentence);
  for (const { kind, pattern, needs } of SURFACE_PATTERNS) {
    if (!needs(sentence, innerDot)) continue;
    for (const match of matchesOf(pattern, sentence)) {
      const text = match[0];
      if ((kind === "file" || kind === "path") && FRAMEWORK_DOT_JS.test(text.slice(text.lastIndexOf("/") + 1))) continue;
      if (kind === "event" && (EVENT_FALSE_POSITIVES.test(text) || FRAMEWORK_DOT_JS.test(text))) continue;
      if (kind === "endpoint" && text.length < 3) continue;
      strong = true;
      if (visit(text)) return "strong";
    }
  }
  if (!nouns) return strong ? "strong" : "none";
  // Named surfaces: a surface noun with up to three meaningful modifiers before it
  // ("the Stripe webhook handler", "RestoreAssist's iOS billing code path").
  for (const match of matchesOf(SURFACE_NOUN_RUN, sentence)) {
    const at = match.index ?? 0;
    const modifiers: string[] = [];
    // Words before the noun, read backwards within 120 characters (no split of the whole stretch).
    const floor = Math.max(0, at - 120);
    for (let end = at; modifiers.length < 3; ) {
      while (end > floor && isSpace(sentence.charCodeAt(end - 1))) end--;
      if (end === floor) break;
      let start = end;
      while (start > floor && !isSpace(sentence.charCodeAt(start - 1))) start--;
      const token = sentence.slice(start, end);
      end = start;
      if (!MODIFIER.test(token)) break;
      const lower = token.toLowerCase();
      if (STOPWORD_MODIFIERS.has(lower) || NUMBER.test(token)) break;
      if (ACTION_VERBS.has(lower) && !NOUN_LIKE_VERBS.has(lower)) break;
      modifiers.unshift(token);
    }
    if (modifiers.length === 0) continue;
    strong = true;
    if (visit(`${modifiers.join(" ")} ${match[0]}`)) return "strong";
  }
  if (strong) return "strong";
  let bare = false;
  for (const match of matchesOf(BARE_SURFACE, sentence)) {
    bare = true;
    if (visit(match[0])) return "bare";
  }
  return bare ? "bare" : "none";
}

const FIRST = () => true;

/** The strength of a sentence's surfaces, read only as far as the first. */
function surfaceStrength(sentence: string, nouns: boolean = scanWords(sentence).surfaceNoun): SurfaceStrength {
  return visitSurfaces(sentence, nouns, FIRST);
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
    const found: string[] = [];
    visitSurfaces(sentence.text, scanWords(sentence.text).surfaceNoun, (phrase) => {
      addPhrase(found, phrase);
      return false;
    });
    SURFACE_LISTS.set(sentence, (list = found));
  }
  return list;
}

// ---------------------------------------------------------------- directives

const LABEL_DIRECTIVE =
  /^(?:the\s+|our\s+)?(?:recommendations?|recommended\s+(?:actions?|fix|change|next\s+steps?)|action(?:\s+items?)?|next\s+steps?|(?:suggested\s+|proposed\s+)?(?:fix|solution|remedy|change|action)|to\s*do|todo|proposal)\s*:\s*/i;
/** A sentence that opens with a recommendation verb: "Recommend adding …", "We suggest moving …". */
const RECOMMEND_LEAD = /^(?:we\s+|i\s+)?(?:(?:strongly\s+)?(?:recommend|suggest|propose|advise))(?:\s+that)?(?:\s+we|\s+you)?\b/i;
/** Any other short label before the body of a sentence ("TL;DR:", "Why:", "Update:"). */
const ANY_LABEL = /^[\w;'&/ -]{1,24}:\s+/;

const MODAL =
  /\b(?:should|must|ought\s+to|(?:will\s+|'ll\s+)?needs?\s+to|ha(?:ve|s)\s+to|it\s+is\s+(?:critical|important|essential|necessary|urgent|imperative)\s+(?:that\s+we|to)|(?:i|we)\s+(?:strongly\s+)?recommend(?:\s+that)?(?:\s+we|\s+you)?|it\s+is\s+recommended\s+(?:that\s+(?:we\s+|you\s+)?|to)|the\s+(?:fix|next\s+step|remedy)\s+is\s+to)\b/gi;

/** Every MODAL match contains one of these words. */
const MODAL_TRIGGERS = new Set(["should", "must", "ought", "need", "needs", "have", "has", "critical", "important", "essential", "necessary", "urgent", "imperative", "recommend", "recommended", "fix", "next", "remedy"]);

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

function findDirective(sentence: string, modalWord: boolean, surfaceSubject: (subject: string) => boolean): Directive | null {
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

// ---------------------------------------------------------------- reading

/** Whether the text ends in a question mark, maybe followed by spaces, then quotes and brackets (read from the end). */
function endsWithQuestion(text: string): boolean {
  let end = text.length;
  while (end > 0 && CLOSERS.includes(text[end - 1]!)) end--;
  while (end > 0 && isSpace(text.charCodeAt(end - 1))) end--;
  return end > 0 && text[end - 1] === "?";
}
const CLOSERS = `"')]`;

/** The verb a directive governs and whether it is hedged ("consider moving"): an imperative is its own verb. */
function verbOf(text: string, directive: Directive | null): { verb: string | null; hedged: boolean } {
  if (!directive) return { verb: null, hedged: false };
  if (directive.kind === "imperative") return { verb: baseVerb(directive.phrase) ?? directive.phrase.toLowerCase(), hedged: false };
  return governedVerb(text, directive.end);
}

/** Sentences read as one batch (a batch takes well under a millisecond). */
const BATCH_SENTENCES = 64;

/**
 * A batch of sentences read one step at a time, each step over the whole batch before the next:
 * a step's patterns stay in the processor's caches (read sentence by sentence, switching between a
 * hundred patterns missed the instruction cache four times as often). Scores are still 0: scoring
 * needs the sentences after.
 */
function readBatch(texts: readonly string[], first: number, counts: { words: number; functionWords: number }): SentenceReading[] {
  const scans = texts.map(scanWords);
  const directives = texts.map((text, i) => findDirective(text, scans[i]!.modal, (subject) => surfaceStrength(subject) === "strong"));
  const found = (family: CueGroup) => texts.map((text, i) => collect(family, text, scans[i]!.bits));
  const hedges = found(HEDGES), followUps = found(FOLLOW_UPS), conditionals = found(CONDITIONALS), reported = found(REPORTED);
  const measurable = found(MEASURABLE), negations = found(NEGATIONS), placeholders = found(PLACEHOLDERS), inconclusive = found(INCONCLUSIVE), intel = found(INTEL);
  // Surfaces and purpose count only where a recommendation is, or a hedged one may be (the
  // score of a sentence without a directive is never used): most sentences skip both.
  const purpose = texts.map((text, i) => (directives[i] ? collect(PURPOSE, text, scans[i]!.bits) : NO_CUES));
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

function scoreSentence(s: SentenceReading, neighbourMeasurable: boolean, docMeasurable: boolean): number {
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
  const { words: wordCount, functionWords: functionWordCount } = counts;
  const docMeasurable = sentences.some((s) => s.measurable.length > 0);
  // Scored in place (a copy per sentence was a fifth of the reading's time on a large body).
  const outcomeNext = (n: SentenceReading | undefined) => n !== undefined && n.measurable.length > 0 && !n.directive;
  for (let i = 0; i < sentences.length; i++) {
    const s = sentences[i]!;
    s.score = scoreSentence(s, outcomeNext(sentences[i + 1]) || outcomeNext(sentences[i + 2]), docMeasurable);
  }
  let best: SentenceReading | null = null;
  for (const s of sentences) if (s.directive && s.score > 0 && (!best || s.score > best.score)) best = s;
  return { normalised, prose, hadFence: fenced.hadFence, wordCount, functionWordCount, sentences, best };
}

/** The reading in one go (short texts, the CLI, tests). */
export function readResearch(text: string): ResearchReading {
  return runSteps(readingSteps(text));
}

