// The cues of a sentence: families of patterns (negations, hedges, conditions, reported advice, follow-ups,
// intel, measurable outcomes, placeholders, inconclusive findings, purpose clauses) whose matches the
// reading lists per sentence, and a question at its end. What each cue weighs is scoring.ts's.
import { isSpace, WordHints } from "../../hints.js";

/**
 * A family of cue patterns, compiled once. `triggers`: words (lower case) of which every match
 * contains at least one (a word, a piece of a hyphenated one, either without a possessive "'s"), so a
 * sentence without any of them skips the family untested; "#digit" stands for any digit, "#n't" for any
 * word that ends in "n't". words.ts finds a sentence's triggers in its one pass over the words;
 * test/unit/margot/cue-triggers.test.ts checks the lists against the patterns.
 */
export interface CueGroup {
  readonly patterns: readonly RegExp[];
  readonly triggers: readonly string[];
  /** One case-insensitive union of the patterns: a superset, tested before the members. */
  readonly any: RegExp;
  /**
   * Every pattern is case-insensitive (and has no other flag): the union then matches exactly where
   * one of them does, so no pattern matches before the union's first match, and each starts there.
   */
  readonly exact: boolean;
  readonly bit: number;
}

/** Every family's trigger words, each with the bits of the families it triggers. */
export const CUE_TRIGGERS = new WordHints();

function cueGroup(patterns: readonly RegExp[], triggers: readonly string[]): CueGroup {
  return {
    patterns: patterns.map((p) => (p.flags.includes("g") ? p : new RegExp(p.source, `${p.flags}g`))),
    triggers,
    any: new RegExp(patterns.map((p) => `(?:${p.source})`).join("|"), "i"),
    exact: patterns.every((p) => p.flags.replace("g", "") === "i"),
    bit: CUE_TRIGGERS.add(triggers),
  };
}

/** What most families find in most sentences: one frozen list for all of them, not a list per family and sentence. */
export const NO_CUES: readonly string[] = Object.freeze([]);

/** The phrases of a family found in a sentence; `bits`: the families its words trigger. */
export function collect(group: CueGroup, text: string, bits: number): readonly string[] {
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
export function addPhrase(list: string[], match: string): void {
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

const HEDGES = cueGroup(
  [
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
  ],
  [
    "could", "might", "may", "worth", "perhaps", "possibly", "maybe", "optionally", "ideally", "point", "eventually", "future", "nice", "urgency", "urgent",
    "consider", "whether", "would",
  ],
);

const CONDITIONALS = cueGroup([/^\s*(?:if|unless|once|when|should\s+\w+\s+(?:grow|rise|increase))\b[^,]*,?/gi, /\b(?:if|unless)\s+\w+(?:\s+\w+)?\s+(?:rises?|grows?|increases?|exceeds?|drops?|falls?|becomes?)\b/gi], ["if", "unless", "once", "when", "grow", "rise", "increase"]);

const REPORTED = cueGroup(
  [
    /\baccording\s+to\b/gi,
    // "Apple says developers should …": a named third party giving the advice.
    /\b(?!(?:We|I|You|Our|This|That|It)\b)[A-Z][\w.'-]*(?:\s+[A-Z][\w.'-]*){0,3}\s+(?:say|says|said|recommend|recommends|recommended|advise|advises|suggest|suggests|state|states|warn|warns|claim|claims)\b(?!\s*:)/g,
    /\b(?:docs?|documentation|guides?|guidance|blog\s+posts?|posts?|articles?|sessions?|talks?|surveys?|vendors?|teams|people|they|others|sources?|analysts?)\s+(?:say|says|recommend|recommends|suggest|suggests|note|notes|state|states|report|reports|claim|claims|advise|advises)\b/gi,
  ],
  [
    "according", "say", "says", "said", "recommend", "recommends", "recommended", "advise", "advises", "suggest", "suggests", "state", "states", "warn",
    "warns", "claim", "claims", "note", "notes", "report", "reports",
  ],
);

const FOLLOW_UPS = cueGroup(
  [
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
  ],
  [
    "deep-dive", "deepdive", "deep", "dive", "research", "further", "investigation", "investigate", "dig", "explore", "recommendation", "recommendations",
    "more", "pass", "rerun", "re-run", "follow-up", "follow",
  ],
);

const INTEL = cueGroup(
  [
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
  ],
  [
    "what's", "whats", "released", "announced", "launched", "shipped", "published", "out", "available", "beta", "supports", "support", "release", "changelog",
    "market", "competitor", "competitors", "competitive", "landscape", "segment", "pricing", "raised", "survey", "adoption", "telemetry", "filing", "filings",
    "ipo",
  ],
);

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
  // A stated expected outcome is a measurable state change even without a number.
  /\bexpected\s+(?:outcome|result|impact|effect)s?\b/gi,
  /\b(?:should|will|would)\s+(?:then\s+)?(?:disappear|go\s+away|vanish|stop\s+\w+ing|close)\b/gi,
], ["#digit", "zero", "expected", "disappear", "away", "vanish", "stop", "close"]);

/** Text standing in for a finding that is not there yet. */
const PLACEHOLDERS = cueGroup(
  [
    /\bTODO\b/g,
    /\bTBD\b/gi,
    /\[[^\]\n]{0,60}\b(?:insert|add|added|summary|findings?|recommendations?|tbd|todo|placeholder)\b[^\]\n]{0,60}\]/gi,
    /\bgoes\s+here\b/gi,
    /\bcoming\s+soon\b/gi,
    // "placeholder entry", a text that opens with it; not a UI skeleton placeholder.
    /\bplaceholder\s+(?:entry|text|summary|findings?|content|only)\b|^\s*placeholder\b/gi,
    /\blorem\s+ipsum\b/gi,
    /\bto\s+be\s+(?:determined|added|written|confirmed)\b/gi,
  ],
  [
    "todo", "tbd", "insert", "add", "added", "summary", "finding", "findings", "recommendation", "recommendations", "placeholder", "here", "soon", "lorem",
    "determined", "written", "confirmed",
  ],
);

/** Findings that do not settle anything: inconclusive, contradictory, or too thin to say. */
const INCONCLUSIVE = cueGroup(
  [
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
  ],
  [
    "inconclusive", "unclear", "clear", "consensus", "not", "#n't", "cannot", "disagree", "conflict", "contradict", "conflicting", "contradictory", "mixed",
    "inconsistent", "both", "enough", "insufficient", "favour", "favor", "ambiguous",
  ],
);

const PURPOSE = cueGroup(
  [
    /\bso\s+that\b/gi,
    /\bin\s+order\s+to\b/gi,
    /\b(?:to|which\s+will|which\s+should|reducing|cutting|eliminating)\s+(?:prevent|avoid|stop|eliminate|ensure|reduce|cut|lower|improve|bring|keep|free|make\s+sure|speed\s+up|fix)\b/gi,
    /\b(?:reducing|cutting|eliminating|preventing|lowering)\b/gi,
    /\b(?:latency|error\s+rate|failure\s+rate|throughput|uptime|TTFB|LCP|INP|CLS|conversion)\b/gi,
  ],
  [
    "so", "order", "prevent", "avoid", "stop", "eliminate", "ensure", "reduce", "cut", "lower", "improve", "bring", "keep", "free", "make", "speed", "fix",
    "reducing", "cutting", "eliminating", "preventing", "lowering", "latency", "error", "rate", "throughput", "uptime", "ttfb", "lcp", "inp", "cls",
    "conversion",
  ],
);

/** A run that produced no finding: "Margot could not complete this research: …". */
export const RESEARCH_FAILED =
  /\b(?:could\s+not|couldn't|was\s+unable\s+to|unable\s+to|failed\s+to)\s+(?:complete|finish|find|access|retrieve|fetch|load|reach)\b|\b(?:research|request|run)\s+(?:timed\s+out|failed|was\s+cancel+ed)\b/i;

/** Every family, by the name of its list in a sentence's reading. */
export const CUE_GROUPS = {
  negations: NEGATIONS,
  hedges: HEDGES,
  conditionals: CONDITIONALS,
  reported: REPORTED,
  followUps: FOLLOW_UPS,
  intel: INTEL,
  measurable: MEASURABLE,
  placeholders: PLACEHOLDERS,
  inconclusive: INCONCLUSIVE,
  purpose: PURPOSE,
} as const;

/** Whether the text ends in a question mark, maybe followed by spaces, then quotes and brackets (read from the end). */
export function endsWithQuestion(text: string): boolean {
  let end = text.length;
  while (end > 0 && CLOSERS.includes(text[end - 1]!)) end--;
  while (end > 0 && isSpace(text.charCodeAt(end - 1))) end--;
  return end > 0 && text[end - 1] === "?";
}
const CLOSERS = `"')]`;
