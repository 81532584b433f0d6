// The intent router for Margot research output: action_shaped | informational | unknown.
//
// Deterministic and explainable. The text is cut into sentences (lines, bullets,
// headings, sentence ends, ";" and ", but"); each sentence is read for the
// seed's three positive cues and for the cues that cancel them:
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
//
// The best sentence is the action sentence. The result:
//   action_shaped  its score ≥ 0.75 (the seed's floor); confidence = that score.
//   unknown        empty, too short (< 4 words), only fenced code, garbled (almost no
//                  English function words), a failed-research notice, a negated
//                  sentence about the same thing as an action sentence scoring ≥ 0.6
//                  (mixed evidence), or a best score in [0.6, 0.75) with no cue
//                  against it (partial evidence).
//   informational  everything else; confidence 0.95 − 0.6 × best score, minus 0.2
//                  when a hedged sentence names real code (ambiguous), within [0.55, 0.95].
// Confidence is always the confidence in the returned label, two decimals.
import type { Classification } from "./contract.js";

export type { Classification };

/** The seed's confidence floor for routing to action. */
export const ACTION_CONFIDENCE_FLOOR = 0.75;

export type UnknownReason =
  | "empty"
  | "too_short"
  | "no_prose"
  | "incoherent"
  | "research_failed"
  | "mixed_evidence"
  | "partial_evidence";

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

/** Everything read from one sentence; exported for extraction. */
export interface SentenceReading {
  index: number;
  text: string;
  directive: Directive | null;
  governedVerb: string | null;
  actionVerbs: string[];
  surfaces: string[];
  strongSurface: boolean;
  measurable: string[];
  purpose: string[];
  hedges: string[];
  negations: string[];
  question: boolean;
  intel: string[];
  followUps: string[];
  conditionals: string[];
  reported: string[];
  /** 0..0.98 before rounding. */
  score: number;
}

export interface ResearchReading {
  /** Prose with fenced code removed. */
  prose: string;
  sentences: SentenceReading[];
  best: SentenceReading | null;
}

// ---------------------------------------------------------------- lexicons

/** Base forms of verbs that change code or data. */
const ACTION_VERBS = new Set([
  "acknowledge", "add", "adopt", "apply", "backfill", "batch", "block", "build", "bump", "cache", "call", "cap",
  "change", "clean", "clear", "compress", "configure", "consolidate", "convert", "create", "debounce", "dedupe",
  "deduplicate", "defer", "delete", "deploy", "deprecate", "destroy", "disable", "drop", "enable", "encrypt",
  "enforce", "ensure", "erase", "escape", "exclude", "expire", "extract", "filter", "fix", "flush", "force",
  "generate", "guard", "handle", "harden", "hash", "hide", "implement", "include", "increase", "index", "inline",
  "install", "instrument", "introduce", "invalidate", "limit", "lock", "log", "lower", "make", "memoize",
  "merge", "migrate", "move", "paginate", "pass", "patch", "persist", "pin", "prefetch", "purge", "raise",
  "rate-limit", "rebuild", "redeploy", "reduce", "refactor", "refresh", "regenerate", "remove", "rename",
  "replace", "require", "reset", "resize", "restrict", "retry", "return", "revert", "rewrite", "rework",
  "rotate", "sanitize", "sanitise", "schedule", "scope", "send", "serve", "set", "shorten", "sign", "split",
  "stop", "store", "stream", "strip", "switch", "throttle", "tighten", "track", "trim", "truncate",
  "uninstall", "unpin", "update", "upgrade", "use", "validate", "verify", "wipe", "wrap", "write",
  "redact", "mask", "scrub", "swap", "substitute", "offload", "parallelize", "parallelise", "precompute",
  "denormalize", "normalize", "normalise", "partition", "decouple", "isolate", "gate", "allowlist", "blocklist",
  "adjust", "decrease", "extend", "expand", "attach", "detach", "route", "proxy", "forward", "redirect", "emit",
  "notify", "sync", "reindex", "archive", "retire", "sunset", "decommission", "port", "reroute", "bound",
  "parameterize", "parameterise", "decrypt", "authenticate", "authorize", "authorise", "protect", "coalesce",
  "preload", "lazy-load", "code-split", "minify", "optimize", "optimise", "tune", "cut", "shrink", "downgrade",
  "hotfix", "backport", "relocate", "combine", "unify", "standardize", "standardise", "prune", "evict", "reload",
  "restart", "provision", "document", "test", "cover", "trace", "catch", "transform", "simplify", "separate",
  "repair", "correct", "resolve", "address", "mitigate", "plug", "relax", "permit", "deny", "reject", "accept",
  "respond", "propagate", "expose", "revoke", "reissue", "chunk", "queue", "seed", "rollback", "roll",
  "release", "ship", "upload", "download", "import", "export", "debounce", "re-enable", "reconfigure",
]);

/** Action verbs that are also common nouns at the start of a sentence ("Cache hit rate is …"). */
const NOUN_LIKE_VERBS = new Set([
  "batch", "block", "build", "cache", "call", "cap", "change", "drop", "filter", "hash", "index", "limit", "lock",
  "log", "patch", "return", "schedule", "scope", "set", "split", "stream", "track", "update", "use", "write",
  "merge", "reset", "stop", "switch", "test", "document", "cover", "trace", "catch", "address", "release",
  "ship", "queue", "seed", "sync", "export", "import", "upload", "download", "archive", "proxy", "route", "port",
  "chunk", "plug", "gate", "bound", "roll", "cut", "correct", "forward", "accept", "reject", "expose", "emit",
]);

/** Verbs that ask for more research rather than a change. */
const RESEARCH_VERBS = new Set([
  "investigate", "research", "explore", "evaluate", "assess", "analyze", "analyse", "study", "benchmark",
  "compare", "review", "look", "dig", "audit", "measure", "survey",
]);

/** Verbs that put a decision off. */
const DEFERRAL_VERBS = new Set(["revisit", "reconsider", "wait", "watch", "monitor", "keep", "hold", "think"]);

const IRREGULAR_PARTICIPLES: Record<string, string> = {
  built: "build", written: "write", rewritten: "rewrite", set: "set", split: "split", made: "make", sent: "send",
  kept: "keep", run: "run", reset: "reset", hidden: "hide", cut: "cut", done: "do",
};

const SKIPPABLE_ADVERBS = new Set([
  "also", "definitely", "really", "now", "immediately", "urgently", "first", "then", "still", "just", "quickly",
  "soon", "either", "both", "additionally", "instead", "simply", "explicitly", "additionally", "actually",
  "promptly", "therefore", "clearly", "always",
]);

const STRONG_SUBJECTS = /\b(?:we|you|i|team|engineering|engineers|developers|devs|someone|restoreassist)\b/i;

const SURFACE_NOUNS = [
  "webhooks?", "handlers?", "endpoints?", "routes?", "apis?", "tables?", "columns?", "indexes", "index",
  "migrations?", "functions?", "modules?", "components?", "pages?", "screens?", "views?", "jobs?", "workers?",
  "queues?", "cron", "middleware", "code ?paths?", "flows?", "services?", "clients?", "sdks?", "schemas?",
  "buckets?", "folders?", "policy", "policies", "cookies?", "headers?", "queries", "query", "triggers?",
  "hooks?", "integrations?", "pipelines?", "config", "configuration", "settings?", "forms?", "buttons?",
  "templates?", "scripts?", "parsers?", "controllers?", "models?", "resolvers?", "bundles?", "builds?",
  "workflows?", "checks?", "loops?", "urls?", "secrets?", "keys?", "branch(?:es)?", "repo(?:sitory)?",
  "database", "db", "checkout", "portal", "dashboard", "uploader", "sessions?", "tokens?", "env(?:ironment)? vars?",
  "feature flags?", "actions?", "library", "packages?", "dependency", "dependencies", "presets?", "listeners?",
  "subscriptions?", "entitlements?", "gallery", "galleries", "cache",
].join("|");

const STOPWORD_MODIFIERS = new Set([
  "the", "a", "an", "this", "that", "these", "those", "our", "their", "its", "his", "her", "my", "your", "every",
  "each", "all", "any", "some", "no", "one", "new", "old", "same", "other", "which", "whose", "of", "to", "in",
  "on", "for", "and", "or", "with", "by", "from", "at", "is", "are", "was", "be", "it", "we", "you", "they",
]);

/** Proper nouns frameworks use for themselves ("Next.js") are not file names. */
const FRAMEWORK_DOT_JS = /^(?:next|node|nuxt|vue|react|express|three|chart|d3|ember|backbone|angular|deno|bun|socket|solid|svelte)\.js$/i;

const FUNCTION_WORDS = new Set([
  "the", "a", "an", "to", "of", "and", "or", "in", "on", "for", "with", "is", "are", "was", "were", "be", "been",
  "we", "it", "this", "that", "our", "from", "by", "as", "at", "not", "no", "has", "have", "had", "should",
  "must", "can", "will", "would", "could", "may", "might", "but", "if", "so", "than", "then", "there", "their",
  "they", "you", "which", "what", "who", "when", "how", "all", "any", "its", "into", "about", "after", "before",
  "per", "over", "under", "because", "since", "does", "do", "did", "also", "only", "more", "most", "some",
]);

// ---------------------------------------------------------------- cue patterns

// Negation of the directive itself, not any "not" ("the parser does not expect …" is a fact).
const NEGATIONS: RegExp[] = [
  /\b(?:should|must|ought|need)\s*(?:not|n't)\b/gi,
  /\b(?:shouldn't|mustn't|needn't)\b/gi,
  /\b(?:do|does|did|will|would)\s*(?:not|n't)\s+(?:need\s+to|have\s+to|require)\b/gi,
  /\b(?:don't|doesn't|didn't|won't)\s+(?:need\s+to|have\s+to|require)\b/gi,
  /\bno\s+need\s+to\b/gi,
  /\bno\s+(?:action|changes?|work|fix|update|migration)\s+(?:is\s+|are\s+)?(?:needed|required|necessary|warranted)\b/gi,
  /\bnot\s+(?:necessary|required|needed|warranted)\b/gi,
  /\bnothing\s+(?:to\s+(?:change|fix|do)|needs\s+to\s+(?:change|be\s+done))\b/gi,
  /^\s*(?:do\s+not|don't|never)\b/gi,
];

const HEDGES: RegExp[] = [
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
];

const CONDITIONALS: RegExp[] = [/^\s*(?:if|unless|once|when|should\s+\w+\s+(?:grow|rise|increase))\b[^,]*,?/gi, /\b(?:if|unless)\s+\w+(?:\s+\w+)?\s+(?:rises?|grows?|increases?|exceeds?|drops?|falls?|becomes?)\b/gi];

const REPORTED: RegExp[] = [
  /\baccording\s+to\b/gi,
  // "Apple says developers should …": a named third party giving the advice.
  /\b(?!(?:We|I|You|Our|This|That|It)\b)[A-Z][\w.'-]*(?:\s+[A-Z][\w.'-]*){0,3}\s+(?:say|says|said|recommend|recommends|recommended|advise|advises|suggest|suggests|state|states|warn|warns|claim|claims)\b(?!\s*:)/g,
  /\b(?:docs?|documentation|guides?|guidance|blog\s+posts?|posts?|articles?|sessions?|talks?|surveys?|vendors?|teams|people|they|others|sources?|analysts?)\s+(?:say|says|recommend|recommends|suggest|suggests|note|notes|state|states|report|reports|claim|claims|advise|advises)\b/gi,
];

const FOLLOW_UPS: RegExp[] = [
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
];

const INTEL: RegExp[] = [
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
];

const MEASURABLE: RegExp[] = [
  /\d+(?:\.\d+)?\s?%/g,
  /\b\d+(?:[.,]\d+)?\s?(?:ms|s|sec|secs|seconds?|minutes?|mins?|hours?|hrs?|days?|weeks?|KB|MB|GB|TB|px|x)\b/gi,
  /\bfrom\s+[^,.;]{0,30}?\d[^,;]{0,20}?\s+to\s+(?:under\s+|below\s+|above\s+|over\s+|less\s+than\s+|near\s+)?[^,;\s]+/gi,
  /\b(?:to|at|target:?)\s+(?:0|zero|near\s+zero)\b/gi,
  /\b(?:under|below|above|over|less\s+than|more\s+than|at\s+most|at\s+least|within|fewer\s+than)\s+\$?\d[\d.,]*/gi,
  /\bby\s+(?:about\s+|roughly\s+|around\s+)?\d[\d.,]*\s?%?/gi,
  /\b\d[\d,]*\s+(?:requests?|errors?|failures?|retries|events?|users?|tickets?)\s+(?:per|a|an|each)\s+\w+/gi,
  /\bp(?:50|75|90|95|99)\b/gi,
  /\bdrops?\s+to\s+zero\b/gi,
];

const PURPOSE: RegExp[] = [
  /\bso\s+that\b/gi,
  /\bin\s+order\s+to\b/gi,
  /\b(?:to|which\s+will|which\s+should|reducing|cutting|eliminating)\s+(?:prevent|avoid|stop|eliminate|ensure|reduce|cut|lower|improve|bring|keep|free|make\s+sure|speed\s+up|fix)\b/gi,
  /\b(?:reducing|cutting|eliminating|preventing|lowering)\b/gi,
  /\b(?:latency|error\s+rate|failure\s+rate|throughput|uptime|TTFB|LCP|INP|CLS|conversion)\b/gi,
];

/** A run that produced no finding: "Margot could not complete this research: …". */
const RESEARCH_FAILED =
  /\b(?:could\s+not|couldn't|was\s+unable\s+to|unable\s+to|failed\s+to)\s+(?:complete|finish|find|access|retrieve|fetch|load|reach)\b|\b(?:research|request|run)\s+(?:timed\s+out|failed|was\s+cancel+ed)\b/i;

// ---------------------------------------------------------------- text shaping

const ABBREVIATION = /\b(e\.g|i\.e|etc|vs|approx|incl|cf|Inc|Ltd|Pty|No|Dr|Mr|Ms|Mrs|St)\./g;
const DOT_MASK = "\u2024";

function normalise(text: string): string {
  return text
    .replace(/\r\n?/g, "\n")
    .replace(/[\u2018\u2019]/g, "'")
    .replace(/[\u201C\u201D]/g, '"')
    .replace(/\u00A0/g, " ");
}

function stripFences(text: string): { prose: string; hadFence: boolean } {
  let hadFence = false;
  const prose = text.replace(/```[^\n]*\n[\s\S]*?(?:```|$)/g, () => {
    hadFence = true;
    return "\n";
  });
  return { prose, hadFence };
}

/** Longest token and sentence read: real ones are far shorter, and the bounds keep every pattern linear. */
export const MAX_TOKEN_LENGTH = 200;
export const MAX_SENTENCE_LENGTH = 1000;
const LONG_TOKEN = new RegExp(String.raw`\S{${MAX_TOKEN_LENGTH + 1},}`, "g");

function boundTokens(text: string): string {
  return text.replace(LONG_TOKEN, (token) => token.slice(0, MAX_TOKEN_LENGTH));
}

function boundSentence(sentence: string): string {
  if (sentence.length <= MAX_SENTENCE_LENGTH) return sentence;
  const cut = sentence.slice(0, MAX_SENTENCE_LENGTH);
  const space = cut.lastIndexOf(" ");
  return space > MAX_SENTENCE_LENGTH / 2 ? cut.slice(0, space) : cut;
}

const LINE_MARKER = /^\s*(?:#{1,6}\s+|>\s*|[-*+\u2022]\s+|\d{1,3}[.)]\s+)/;

/** Cut text into sentences: blocks by line structure, then on sentence punctuation and contrast markers. */
export function splitSentences(text: string): string[] {
  const blocks: string[] = [];
  let current = "";
  let currentIsHeading = false;
  for (const raw of normalise(text).split("\n")) {
    const line = raw.trim();
    if (line === "") {
      if (current) blocks.push(current);
      current = "";
      continue;
    }
    const startsItem = LINE_MARKER.test(raw);
    const cleaned = line.replace(LINE_MARKER, "").replace(/\*\*|__/g, "").trim();
    // A hard-wrapped paragraph continues on the next line; items, headings and finished sentences do not.
    if (startsItem || current === "" || currentIsHeading || /[.!?:]$/.test(current)) {
      if (current) blocks.push(current);
      current = cleaned;
    } else {
      current = `${current} ${cleaned}`;
    }
    currentIsHeading = /^#{1,6}\s/.test(line);
  }
  if (current) blocks.push(current);

  const sentences: string[] = [];
  for (const block of blocks.map(boundTokens)) {
    const masked = block.replace(ABBREVIATION, (m) => m.replace(/\./g, DOT_MASK));
    for (const piece of masked.split(/(?<=[.!?])["')\]]*\s+|;\s+|,\s+(?=(?:but|however|although|whereas)\b)/i)) {
      const sentence = boundSentence(piece.replaceAll(DOT_MASK, ".").trim());
      if (sentence) sentences.push(sentence);
    }
  }
  return sentences;
}

function words(text: string): string[] {
  return text.match(/\p{L}[\p{L}'-]*/gu) ?? [];
}

function collect(patterns: readonly RegExp[], text: string): string[] {
  const found: string[] = [];
  for (const pattern of patterns) {
    for (const match of text.matchAll(new RegExp(pattern.source, pattern.flags.includes("g") ? pattern.flags : `${pattern.flags}g`))) {
      const phrase = match[0].trim().replace(/\s+/g, " ");
      if (phrase && !found.some((f) => f.toLowerCase() === phrase.toLowerCase())) found.push(phrase);
    }
  }
  return found;
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

const SURFACE_PATTERNS: { kind: string; pattern: RegExp }[] = [
  { kind: "path", pattern: /(?<![\w@])(?:[\w.@[\]-]+\/)+[\w.[\]-]+\.(?:tsx?|jsx?|mjs|cjs|py|swift|kt|java|rb|go|rs|sql|json|ya?ml|toml|css|scss|html|md|prisma|sh)\b/g },
  { kind: "file", pattern: /(?<![\w/.-])[\w-]+\.(?:tsx?|jsx?|mjs|cjs|py|swift|kt|java|rb|go|rs|sql|json|ya?ml|toml|prisma|sh)\b/g },
  { kind: "dotfile", pattern: /(?<![\w/])\.(?:env[\w.*-]*|gitignore|github|npmrc|vercel)\b/g },
  { kind: "endpoint", pattern: /(?<![\w.:/@-])\/[a-z][\w-]*(?:\/[\w{}[\]:.-]+)*/g },
  { kind: "code", pattern: /`[^`\n]{2,80}`/g },
  { kind: "call", pattern: /\b[A-Za-z_][\w.]*\(\)/g },
  { kind: "identifier", pattern: /\b[a-z]+(?:[A-Z][a-z0-9]+)+\b|\b[A-Z][a-z0-9]+(?:[A-Z][a-z0-9]+){1,}\b(?=\.\w+\b|\(|\s+(?:in|class|struct|component|module|service|view|screen))|\b[a-z][a-z0-9]*(?:_[a-z0-9]+)+\b|\b[A-Z][A-Z0-9]*(?:_[A-Z0-9]+){2,}\b/g },
  { kind: "package", pattern: /(?<![\w/])@?[a-z][\w.-]*(?:\/[\w.-]+)?@\d[\w.-]*|(?<![\w/])@[a-z][\w.-]*\/[\w.-]+/g },
  { kind: "event", pattern: /\b[a-z]+\.[a-z_]+(?:\.[a-z_]+)*\b(?=[\s,.;)]|$)/g },
];

/** A run of surface nouns ("webhook handler", "code path"). */
const SURFACE_NOUN_RUN = new RegExp(String.raw`\b(?:${SURFACE_NOUNS})(?:\s+(?:${SURFACE_NOUNS}))*\b`, "gi");
const BARE_SURFACE = new RegExp(String.raw`\b(?:the|our|its)\s+(?:${SURFACE_NOUNS})\b`, "gi");

const EVENT_FALSE_POSITIVES = /^(?:e\.g|i\.e|vs\.)|\.(?:js|ts|com|io|app|dev|net|org)$/i;

function findSurfaces(sentence: string): { surfaces: string[]; strong: boolean } {
  const surfaces: string[] = [];
  const add = (s: string) => {
    const phrase = s.trim().replace(/\s+/g, " ");
    if (phrase && !surfaces.some((x) => x.toLowerCase() === phrase.toLowerCase())) surfaces.push(phrase);
  };
  for (const { kind, pattern } of SURFACE_PATTERNS) {
    for (const match of sentence.matchAll(pattern)) {
      const text = match[0];
      if ((kind === "file" || kind === "path") && FRAMEWORK_DOT_JS.test(text.split("/").at(-1) ?? "")) continue;
      if (kind === "event" && (EVENT_FALSE_POSITIVES.test(text) || FRAMEWORK_DOT_JS.test(text))) continue;
      if (kind === "endpoint" && text.length < 3) continue;
      add(text);
    }
  }
  // Named surfaces: a surface noun with up to three meaningful modifiers before it
  // ("the Stripe webhook handler", "RestoreAssist's iOS billing code path").
  for (const match of sentence.matchAll(SURFACE_NOUN_RUN)) {
    const at = match.index ?? 0;
    const before = sentence.slice(Math.max(0, at - 120), at).split(/\s+/).filter((t) => t !== "");
    const modifiers: string[] = [];
    for (let i = before.length - 1; i >= 0 && modifiers.length < 3; i--) {
      const token = before[i] ?? "";
      if (!/^[A-Za-z0-9][\w.'-]*$/.test(token)) break;
      const lower = token.toLowerCase();
      if (STOPWORD_MODIFIERS.has(lower) || /^\d+$/.test(token)) break;
      if (ACTION_VERBS.has(lower) && !NOUN_LIKE_VERBS.has(lower)) break;
      modifiers.unshift(token);
    }
    if (modifiers.length > 0) add(`${modifiers.join(" ")} ${match[0]}`);
  }
  const strong = surfaces.length > 0;
  if (!strong) for (const match of sentence.matchAll(BARE_SURFACE)) add(match[0]);
  return { surfaces, strong };
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

const SELF_STRONG_MODAL = /recommend|critical|important|essential|necessary|urgent|imperative|fix|next\s+step|remedy/i;


function tokensAfter(text: string, from: number): { word: string; start: number }[] {
  const tokens: { word: string; start: number }[] = [];
  for (const match of text.slice(from).matchAll(/[A-Za-z][\w'-]*/g)) {
    tokens.push({ word: match[0], start: from + (match.index ?? 0) });
    if (tokens.length >= 8) break;
  }
  return tokens;
}

/** The verb a directive governs: skips adverbs, reads "be fixed" and "consider moving". */
function governedVerb(text: string, from: number): { verb: string | null; raw: string | null; hedged: boolean } {
  const tokens = tokensAfter(text, from);
  let hedged = false;
  let i = 0;
  while (i < tokens.length && SKIPPABLE_ADVERBS.has((tokens[i]?.word ?? "").toLowerCase())) i++;
  let word = tokens[i]?.word.toLowerCase() ?? null;
  if (word === "consider" || word === "try") {
    hedged = true;
    i++;
    word = tokens[i]?.word.toLowerCase() ?? null;
  }
  if (word === "be" || word === "get") {
    i++;
    word = tokens[i]?.word.toLowerCase() ?? null;
  }
  if (word === null) return { verb: null, raw: null, hedged };
  return { verb: baseVerb(word) ?? baseVerb(word, RESEARCH_VERBS) ?? baseVerb(word, DEFERRAL_VERBS), raw: word, hedged };
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

function findDirective(sentence: string, surfaceSubject: (subject: string) => boolean): Directive | null {
  // "Recommendation: switch …" / "Action: add …"
  const label = LABEL_DIRECTIVE.exec(sentence);
  // A bare "Recommended actions:" introduces the items below it; it is no instruction itself.
  if (label) {
    return sentence.slice(label[0].length).trim() === ""
      ? null
      : { phrase: label[0].trim(), strength: "strong", kind: "label", start: 0, end: label[0].length };
  }
  const recommend = RECOMMEND_LEAD.exec(sentence);
  if (recommend) return { phrase: recommend[0].trim(), strength: "strong", kind: "label", start: 0, end: recommend[0].length };
  // "TL;DR: bump …": read past a neutral label, then look for an imperative.
  const other = ANY_LABEL.exec(sentence);
  if (other) {
    const inner = findDirective(sentence.slice(other[0].length), surfaceSubject);
    if (inner?.kind === "imperative") return { ...inner, start: inner.start + other[0].length, end: inner.end + other[0].length };
  }

  // Imperative: an action verb first ("Fix the …", "Please rotate …").
  const lead = /^(please\s+)?([A-Za-z][\w-]*)/i.exec(sentence);
  const verb = lead?.[2];
  if (lead && verb !== undefined) {
    const first = verb.toLowerCase();
    const after = sentence.slice(lead[0].length);
    const next = after.match(/^\s+([^\s]+)/)?.[1];
    const isLabel = after.startsWith(":");
    if (ACTION_VERBS.has(first) && !isLabel && (!NOUN_LIKE_VERBS.has(first) || looksLikeObject(next))) {
      return { phrase: verb, strength: "strong", kind: "imperative", start: lead[0].length - verb.length, end: lead[0].length };
    }
  }

  let best: Directive | null = null;
  for (const match of sentence.matchAll(MODAL)) {
    const start = match.index ?? 0;
    const before = sentence.slice(0, start);
    const subject = before.split(/[,:]/).at(-1) ?? before;
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

function readSentence(text: string, index: number): Omit<SentenceReading, "score"> {
  const { surfaces, strong } = findSurfaces(text);
  const directive = findDirective(text, (subject) => findSurfaces(subject).strong);
  let governed: string | null = null;
  let hedgedVerb = false;
  if (directive) {
    if (directive.kind === "imperative") governed = baseVerb(directive.phrase) ?? directive.phrase.toLowerCase();
    else {
      const g = governedVerb(text, directive.end);
      governed = g.verb;
      hedgedVerb = g.hedged;
    }
  }
  const actionVerbs: string[] = [];
  for (const word of words(text)) {
    const base = ACTION_VERBS.has(word.toLowerCase()) ? word.toLowerCase() : null;
    if (base && !actionVerbs.includes(base)) actionVerbs.push(base);
  }
  if (governed && ACTION_VERBS.has(governed) && !actionVerbs.includes(governed)) actionVerbs.unshift(governed);

  const hedges = collect(HEDGES, text);
  if (hedgedVerb && !hedges.some((h) => /consider|try/i.test(h))) hedges.push("consider");
  const followUps = collect(FOLLOW_UPS, text);
  if (directive && governed && RESEARCH_VERBS.has(governed)) {
    if (!followUps.length) followUps.push(`${directive.phrase} ${governed}`);
  }
  if (directive && governed && DEFERRAL_VERBS.has(governed)) hedges.push(`${directive.phrase} ${governed}`);

  return {
    index,
    text,
    directive,
    governedVerb: governed,
    actionVerbs,
    surfaces,
    strongSurface: strong,
    measurable: collect(MEASURABLE, text),
    purpose: collect(PURPOSE, text),
    hedges,
    negations: collect(NEGATIONS, text),
    question: /\?\s*["')\]]*$/.test(text),
    intel: collect(INTEL, text),
    followUps,
    conditionals: collect(CONDITIONALS, text),
    reported: collect(REPORTED, text),
  };
}

function scoreSentence(s: Omit<SentenceReading, "score">, neighbourMeasurable: boolean, docMeasurable: boolean): number {
  if (s.negations.length > 0 || s.question || s.followUps.length > 0) return 0;
  const directive = s.directive ? (s.directive.strength === "strong" ? 0.4 : 0.28) : 0;
  let verb = 0;
  if (s.directive && s.governedVerb && ACTION_VERBS.has(s.governedVerb)) verb = 0.15;
  else if (s.directive && s.actionVerbs.length > 0) verb = 0.07;
  const surface = s.surfaces.length === 0 ? 0 : s.strongSurface ? 0.25 : 0.12;
  const outcome =
    s.measurable.length > 0 ? 0.2 : s.purpose.length > 0 || neighbourMeasurable ? 0.12 : docMeasurable ? 0.06 : 0;
  let score = directive + verb + surface + outcome;
  if (!s.directive) score = Math.min(score, 0.45);
  if (s.hedges.length > 0) score *= 0.55;
  if (s.conditionals.length > 0) score *= 0.6;
  if (s.reported.length > 0) score *= 0.6;
  return Math.min(score, 0.98);
}

/** Sentence-by-sentence reading of a research body; `classify` and extraction both start here. */
export function readResearch(text: string): ResearchReading {
  const prose = boundTokens(stripFences(normalise(text)).prose);
  const raw = splitSentences(prose).map((sentence, index) => readSentence(sentence, index));
  const docMeasurable = raw.some((s) => s.measurable.length > 0);
  const sentences: SentenceReading[] = raw.map((s, i) => {
    const neighbourMeasurable = [raw[i + 1], raw[i + 2]].some((n) => n !== undefined && n.measurable.length > 0 && !n.directive);
    return { ...s, score: scoreSentence(s, neighbourMeasurable, docMeasurable) };
  });
  let best: SentenceReading | null = null;
  for (const s of sentences) if (s.directive && s.score > 0 && (!best || s.score > best.score)) best = s;
  return { prose, sentences, best };
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
  for (const w of rest.toLowerCase().match(/[a-z0-9][a-z0-9_./-]*/g) ?? []) if (!CONTENT_STOP.has(w) && w.length > 1) set.add(w);
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

function contradicts(action: SentenceReading, negated: SentenceReading): boolean {
  if (!action.directive) return false;
  const a = core(action.text, action.directive.end);
  const n = negationCore(negated);
  if (a.size === 0 || n.size === 0) return false;
  let shared = 0;
  for (const w of n) if (a.has(w)) shared++;
  return shared >= 2 && shared / Math.min(a.size, n.size) >= 0.6;
}

// ---------------------------------------------------------------- classify

const round2 = (x: number) => Math.round(Math.min(1, Math.max(0, x)) * 100) / 100;

function emptySignals(): ClassifySignals {
  return {
    action_verbs: [], code_surfaces: [], measurable_outcomes: [], hedges: [], negations: [], questions: [],
    intel: [], research_follow_up: [], conditionals: [], reported_advice: [], conflicts: [], action_sentence: null,
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
export function classify(text: string): ClassifyResult {
  const normalised = normalise(text ?? "");
  if (normalised.trim() === "") return unknown("empty", 0.95);
  const { prose, hadFence } = stripFences(normalised);
  const allWords = words(prose);
  if (allWords.length < 4 || prose.replace(/\s+/g, " ").trim().length < 20) {
    return unknown(hadFence ? "no_prose" : "too_short", 0.9);
  }
  const functionWords = allWords.filter((w) => FUNCTION_WORDS.has(w.toLowerCase())).length;
  if (functionWords === 0 || functionWords / allWords.length < 0.06) return unknown("incoherent", 0.85);

  const reading = readResearch(normalised);
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
  }
  for (const key of ["hedges", "negations", "questions", "intel", "research_follow_up", "conditionals", "reported_advice"] as const) {
    signals[key] = uniq(signals[key]);
  }
  if (best) {
    signals.action_sentence = best.text;
    signals.action_verbs = uniq([...(best.directive ? [best.directive.phrase.trim().replace(/\s+/g, " ")] : []), ...best.actionVerbs]);
    signals.code_surfaces = best.surfaces;
    signals.measurable_outcomes = uniq([...best.measurable, ...best.purpose]);
  }
  const bestScore = best?.score ?? 0;

  if (best && bestScore >= 0.6) {
    const conflicts = sentences.filter((s) => s.negations.length > 0 && s !== best && contradicts(best, s));
    if (conflicts.length > 0) {
      signals.conflicts = conflicts.map((s) => s.text);
      return unknown("mixed_evidence", 0.5, signals);
    }
  }

  if (best && bestScore >= ACTION_CONFIDENCE_FLOOR) {
    return { classification: "action_shaped", confidence: round2(bestScore), signals };
  }

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
      (s.strongSurface || s.actionVerbs.length > 0),
  );
  const confidence = Math.min(0.95, Math.max(0.55, 0.95 - bestScore * 0.6 - (hedgedCandidate ? 0.2 : 0)));
  return { classification: "informational", confidence: round2(confidence), signals };
}
