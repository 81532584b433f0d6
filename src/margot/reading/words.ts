// One pass over a sentence's words finds everything the reading looks words up for: which cue families its
// words trigger, its action verbs, how many words and function words it has, whether it holds a modal
// word or a word that can start a surface noun. Each word is looked up once, in one table of all of them.
import { CUE_TRIGGERS } from "./cues.js";
import { MODAL_TRIGGERS } from "./directives.js";
import { FNV1A_SEED, fnv1aStep } from "./fnv1a.js";
import { ACTION_VERBS, FUNCTION_WORDS } from "./lexicon.js";
import { SURFACE_FIRST_WORDS } from "./surfaces.js";
import { foldAscii, WordTable } from "./word-table.js";

/** Flags beside the cue bits (the cue families use the low bits). */
const ACTION_WORD = 1 << 24;
const FUNCTION_WORD = 1 << 25;
const MODAL_WORD = 1 << 26;
const SURFACE_WORD = 1 << 27;
const CUE_BITS = ACTION_WORD - 1;

/** Every word the reading looks up, with all it is (cue triggers, action verb, …): one lookup per token. */
const WORD_FLAGS: ReadonlyMap<string, number> = (() => {
  const flags = new Map(CUE_TRIGGERS.words);
  const mark = (words: Iterable<string>, flag: number) => {
    for (const word of words) flags.set(word, (flags.get(word) ?? 0) | flag);
  };
  mark(ACTION_VERBS, ACTION_WORD);
  mark(FUNCTION_WORDS, FUNCTION_WORD);
  mark(MODAL_TRIGGERS, MODAL_WORD);
  mark(SURFACE_FIRST_WORDS, SURFACE_WORD);
  return flags;
})();
const WORD_TABLE = new WordTable(WORD_FLAGS);
/** The cue bits of a word that ends in "n't". */
const NOT_SUFFIX_BITS = CUE_TRIGGERS.words.get("#n't") ?? 0;
/** The cue bits of a digit anywhere in the sentence. */
const DIGIT_TRIGGER_BITS = CUE_TRIGGERS.digitBits;

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

const DIGIT = /\d/;
/** Word tokens for the cue triggers: ASCII and Latin letters (the cues are English). */
const LOWER_TOKEN = /[a-z\u00C0-\u024F][a-z\u00C0-\u024F'-]*/g;

function tokensOf(text: string): string[] {
  return text.toLowerCase().match(LOWER_TOKEN) ?? [];
}

const APOSTROPHE = 39;
const HYPHEN = 45;

function isAsciiLetter(code: number): boolean {
  return ((code | 0x20) - 97) >>> 0 < 26;
}

/** Whether the word `text.slice(start, end)` ends in "n't", any case (the word is at least one letter before it). */
function endsWithNot(text: string, start: number, end: number): boolean {
  return end - start >= 3 && (text.charCodeAt(end - 1) | 0x20) === 116 && text.charCodeAt(end - 2) === APOSTROPHE && (text.charCodeAt(end - 3) | 0x20) === 110;
}

/** Where the word `text.slice(start, end)` ends without a possessive "'s" or "'" (any case); `end` when it has none. */
function possessiveAt(text: string, start: number, end: number): number {
  if (end > start && text.charCodeAt(end - 1) === APOSTROPHE) return end - 1;
  return end - start >= 2 && text.charCodeAt(end - 2) === APOSTROPHE && (text.charCodeAt(end - 1) | 0x20) === 115 ? end - 2 : end;
}

/** The hash the word table looks `text.slice(start, end)` up by (its letters folded). */
function foldedHash(text: string, start: number, end: number): number {
  let hash = FNV1A_SEED;
  for (let i = start; i < end; i++) hash = fnv1aStep(hash, foldAscii(text.charCodeAt(i)));
  return hash;
}

/** Whether the word `text.slice(start, end)` starts with "codepath", any case. */
function startsWithCodepath(text: string, start: number, end: number): boolean {
  return end - start >= 8 && (text.charCodeAt(start) | 0x20) === 99 && text.slice(start, start + 8).toLowerCase() === "codepath";
}

/**
 * Per UTF-16 code unit above ASCII: 1 when lower-casing leaves it as it is and it is no word letter (a dash, an arrow,
 * a quote), 2 when not; 0 not yet known.
 */
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
  // A local, not the module's binding, in the loop that reads every word.
  const table = WORD_TABLE;
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
    let joined = false;
    // Never read past the end (a NaN there would make the loop's numbers floating point).
    for (; i < length; i++) {
      const next = text.charCodeAt(i);
      if (!isAsciiLetter(next)) {
        if (next !== APOSTROPHE && next !== HYPHEN) break;
        joined = true;
      }
      hash = fnv1aStep(hash, foldAscii(next));
    }
    scan.words++;
    if (joined) addPiecesInPlace(scan, table, text, start, i);
    const f = table.get(text, start, i, hash);
    scan.bits |= f & CUE_BITS;
    if (endsWithNot(text, start, i)) scan.bits |= NOT_SUFFIX_BITS;
    if (f & ACTION_WORD) {
      const token = text.slice(start, i).toLowerCase();
      if (!scan.actionVerbs.includes(token)) scan.actionVerbs.push(token);
    }
    if (f & FUNCTION_WORD) scan.functionWords++;
    if (f & MODAL_WORD) scan.modal = true;
    if (f & SURFACE_WORD || startsWithCodepath(text, start, i)) scan.surfaceNoun = true;
  }
  if (hasDigit) scan.bits |= DIGIT_TRIGGER_BITS;
  return scan;
}

/** A word without a possessive "'s" or "'" at its end. */
function withoutPossessive(word: string): string {
  return word.endsWith("'s") ? word.slice(0, -2) : word.endsWith("'") ? word.slice(0, -1) : word;
}

/**
 * What the words inside a hyphenated or possessive word trigger ("market-leading", "competitor's"): a
 * pattern's \b sees them as words of their own. Any other word is looked up whole, by the scan.
 */
function addPiecesInPlace(scan: TokenScan, table: WordTable, text: string, start: number, end: number): void {
  const bareEnd = possessiveAt(text, start, end);
  let hyphen = false;
  for (let at = start; at < end && !hyphen; at++) hyphen = text.charCodeAt(at) === HYPHEN;
  // A contraction ("don't", "we'll") is a whole word: the scan has looked it up.
  if (!hyphen && bareEnd === end) return;
  let flags = bareEnd === end ? 0 : table.get(text, start, bareEnd, foldedHash(text, start, bareEnd));
  if (hyphen) {
    for (let pieceStart = start, at = start; at <= end; at++) {
      if (at < end && text.charCodeAt(at) !== HYPHEN) continue;
      const pieceBare = possessiveAt(text, pieceStart, at);
      flags |= table.get(text, pieceStart, at, foldedHash(text, pieceStart, at));
      if (pieceBare !== at) flags |= table.get(text, pieceStart, pieceBare, foldedHash(text, pieceStart, pieceBare));
      if (endsWithNot(text, pieceStart, pieceBare)) scan.bits |= NOT_SUFFIX_BITS;
      pieceStart = at + 1;
    }
  } else if (endsWithNot(text, start, bareEnd)) {
    scan.bits |= NOT_SUFFIX_BITS;
  }
  scan.bits |= flags & CUE_BITS;
  if (flags & MODAL_WORD) scan.modal = true;
}

/** `addPiecesInPlace` for a word given as a lower-case string. */
function addPieces(scan: TokenScan, word: string): void {
  let flags = WORD_FLAGS.get(withoutPossessive(word)) ?? 0;
  for (const piece of word.split("-")) {
    const bare = withoutPossessive(piece);
    flags |= (WORD_FLAGS.get(piece) ?? 0) | (WORD_FLAGS.get(bare) ?? 0);
    if (bare.endsWith("n't")) scan.bits |= NOT_SUFFIX_BITS;
  }
  scan.bits |= flags & CUE_BITS;
  if (flags & MODAL_WORD) scan.modal = true;
}

function scanTokens(tokens: readonly string[], hasDigit: boolean): TokenScan {
  const scan: TokenScan = {
    words: tokens.length,
    bits: hasDigit ? DIGIT_TRIGGER_BITS : 0,
    actionVerbs: [],
    functionWords: 0,
    modal: false,
    surfaceNoun: false,
  };
  for (const token of tokens) {
    if (token.includes("-") || withoutPossessive(token) !== token) addPieces(scan, token);
    const f = WORD_FLAGS.get(token) ?? 0;
    scan.bits |= f & CUE_BITS;
    if (token.endsWith("n't")) scan.bits |= NOT_SUFFIX_BITS;
    if (f & ACTION_WORD && !scan.actionVerbs.includes(token)) scan.actionVerbs.push(token);
    if (f & FUNCTION_WORD) scan.functionWords++;
    if (f & MODAL_WORD) scan.modal = true;
    if (f & SURFACE_WORD || token.startsWith("codepath")) scan.surfaceNoun = true;
  }
  return scan;
}
