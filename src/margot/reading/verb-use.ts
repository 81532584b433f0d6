// Whether a destructive verb is used as an action on an object ("drop the table", "old rows should be
// deleted", "the job deletes stale sessions"), the one use the destructive gate counts, or as a noun ("a
// sharp drop", "soft deletes account for …") or without an object ("latency drops once the cache is
// warm"). Read from the few words around the verb, not parsed: when the words say neither, it counts.

/** Words right before a verb form that make it a noun: "the drop", "a 5% drop", "sharp drop", "two destroys". */
const NOUN_BEFORE = new Set([
  "the", "a", "an", "this", "that", "these", "those", "any", "no", "each", "every", "some", "many", "several", "few", "multiple",
  "its", "our", "their", "his", "her", "your", "my", "sharp", "big", "small", "steep", "sudden", "significant", "slight", "large",
  "huge", "further", "recent", "nightly", "weekly", "daily", "monthly", "first", "last", "second", "one", "two", "three", "four",
  "five", "six", "seven", "eight", "nine", "ten",
]);
/** Forms of "be"/"get" before a participle: a passive, still an action on the subject. */
const PASSIVE_BEFORE = new Set(["be", "is", "are", "was", "were", "been", "being", "get", "gets", "got", "getting"]);
/** Prepositions (not the infinitive's "to"): a plural form right after one is a noun ("a spike in deletes"). */
const PREPOSITIONS = new Set([
  "in", "on", "at", "of", "with", "without", "for", "from", "by", "about", "after", "before", "during", "between", "among",
  "per", "like", "via", "against", "over", "under", "within", "across", "through", "throughout", "into", "onto", "upon",
]);
/** Words right after a verb form that leave it without an object: prepositions, adverbs, conjunctions, auxiliaries. */
const NO_OBJECT_AFTER = new Set([
  ...PREPOSITIONS, "to", "below", "above", "when", "while", "if", "because", "since", "as", "than", "so", "once", "until", "unless",
  "whenever", "although", "though", "whereas", "again", "further", "back", "down", "up", "considerably", "off", "out", "away",
  "toward", "towards", "around", "almost", "nearly", "faster", "slower", "sooner", "later", "quicker", "twice", "overnight", "clean",
  "is", "are", "was", "were", "will", "would", "should", "could", "can", "may", "might", "rate", "rates",
]);
/** "every few minutes", "each night": a time, not an object. */
const TIMES = /^(?:few|other|couple|\d+|time|times|second|seconds|minute|minutes|hour|hours|day|days|night|nights|week|weeks|month|months|year|years|morning|evening|weekend)$/;

/** Words that start a new clause: the words before one belong to another clause. */
const CLAUSE_START = new Set([
  "and", "but", "or", "so", "because", "since", "when", "while", "where", "although", "though", "if", "as", "once", "until", "unless", "then", "whereas",
]);
/** Words that can be the subject of a verb right after them ("a job that deletes …", "it purges …"). */
const SUBJECTS = new Set(["that", "which", "who", "it", "he", "she", "someone", "something", "everything", "nothing", "one"]);
/** Adjectives that can stand between a determiner and a plural noun: "the soft deletes", "our frequent purges". */
const ADJECTIVES = new Set([
  "soft", "hard", "bulk", "mass", "full", "partial", "remote", "local", "manual", "automatic", "random", "frequent", "occasional",
  "rare", "silent", "concurrent", "accidental", "unexpected", "secure", "safe", "slow", "fast", "repeated", "periodic",
]);
/** Verbs that follow a plural noun subject and are no object of a destructive verb ("cache purges take …"). */
const PLURAL_PREDICATES = new Set([
  "cause", "happen", "occur", "explain", "make", "take", "lose", "hurt", "need", "ran", "took", "made", "came", "went", "grew",
  "fell", "rose", "became", "began", "broke", "dominate", "outnumber",
]);
/** Words that start a noun phrase: determiners, quantifiers, pronouns. */
const DETERMINERS = new Set([
  "the", "a", "an", "this", "that", "these", "those", "all", "any", "every", "each", "some", "no", "its", "their", "our", "your",
  "his", "her", "my", "it", "them", "everything", "anything", "something", "both", "either", "several", "many", "much", "most", "more",
]);
/** Nouns that are objects without a determiner ("… deletes data from …"). */
const MASS_NOUNS = new Set(["data", "cache", "state", "history", "content", "storage", "memory", "traffic", "information"]);

const WORD = /^[\p{L}\p{N}'-]+$/u;

/** Up to `max` words right before `at` in the same clause (nearest last), separated by spaces only, in lower case. */
function wordsBefore(text: string, at: number, max: number): { words: string[]; subject: boolean } {
  const tokens = text.slice(Math.max(0, at - 80), at).split(/\s+/).filter((t) => t !== "");
  // A first token cut by the slice is not a word of the text.
  if (at > 80 && !/\s/.test(text.charAt(at - 81))) tokens.shift();
  const words: string[] = [];
  for (let i = tokens.length - 1; i >= 0 && words.length <= max; i--) {
    const token = tokens[i]!;
    if (!WORD.test(token)) break;
    const word = token.toLowerCase();
    if (SUBJECTS.has(word)) return { words, subject: true };
    if (CLAUSE_START.has(word)) break;
    words.unshift(word);
  }
  return { words, subject: false };
}

function wordBefore(text: string, at: number): string | null {
  const m = /([\p{L}\p{N}%']+)[^\p{L}\p{N}%'.!?;:\n]*$/u.exec(text.slice(Math.max(0, at - 60), at));
  return m?.[1]?.toLowerCase() ?? null;
}

/** The word after `end` (a sentence's final dot is not part of it), or null at a clause's end. */
function wordAfter(text: string, end: number): { word: string; end: number } | null {
  const rest = text.slice(end, end + 60);
  if (/^\s*(?:[.!?;:,)\]]|$)/.test(rest)) return null;
  const m = /^\s*([\p{L}\p{N}_`'"/.$-]+)/u.exec(rest);
  if (!m?.[1]) return null;
  const word = m[1].replace(/\.+$/, "");
  return { word: word.toLowerCase(), end: end + m[0].length - (m[1].length - word.length) };
}

/** Whether the word after a plural form starts a predicate, so the plural form is its subject noun. */
function startsPredicate(text: string, after: { word: string; end: number }): boolean {
  if (PLURAL_PREDICATES.has(after.word)) return true;
  if (DETERMINERS.has(after.word) || MASS_NOUNS.has(after.word) || after.word.endsWith("s") || /^\d/.test(after.word)) return false;
  const next = wordAfter(text, after.end);
  return next === null || NO_OBJECT_AFTER.has(next.word) || DETERMINERS.has(next.word) || /ly$/.test(next.word) || /^\d/.test(next.word);
}

/**
 * Whether a plural form ("deletes", "drops") is a noun subject: it starts its clause, after at most two
 * modifiers ("Soft deletes", "Packet drops") or a determiner and adjectives ("the soft deletes"), and what
 * follows it is a predicate ("… account for …", "… take minutes", "… lock the shard").
 */
function isPluralSubject(text: string, start: number, after: { word: string; end: number }): boolean {
  const { words, subject } = wordsBefore(text, start, 3);
  if (subject) return false;
  const [first] = words;
  const determined = first !== undefined && NOUN_BEFORE.has(first);
  const leads = determined ? words.slice(1).every((w) => ADJECTIVES.has(w) || /(?:ing|ed)$/.test(w)) : words.length <= 2;
  return leads && startsPredicate(text, after);
}

/** Whether the verb form `text.slice(start, end)` is an action on an object. */
export function isActionOnObject(text: string, start: number, end: number): boolean {
  const form = text.slice(start, end).toLowerCase();
  const plural = form.endsWith("s") && !form.endsWith("ss");
  const before = wordBefore(text, start);
  if (before !== null && PASSIVE_BEFORE.has(before)) return true;
  // "this deletes the row", "a job that purges assets": before a plural form, a subject, not a determiner.
  const subject = plural && (before === "this" || before === "that");
  if (before !== null && !subject && (NOUN_BEFORE.has(before) || /^\d|%$/.test(before))) return false;
  if (plural && before !== null && PREPOSITIONS.has(before)) return false;
  const after = wordAfter(text, end);
  if (after === null) return false;
  if (NO_OBJECT_AFTER.has(after.word) || /ly$/.test(after.word) || /^\d/.test(after.word)) return false;
  if ((after.word === "every" || after.word === "each") && TIMES.test(wordAfter(text, after.end)?.word ?? "")) return false;
  return !(plural && isPluralSubject(text, start, after));
}
