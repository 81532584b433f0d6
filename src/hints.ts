// Hints: literals that every match of a rule holds (ADR 0006). Most texts hold no secret, no path and no
// cue, and a regex costs several nanoseconds on every character it is tried at: a text, a line, a run of
// non-space or a sentence that holds none of a rule's hints skips the rule. Every prefilter of that kind
// is here:
//   hintTest       whether a text holds any of a rule's hints (the PII passes)
//   caseless       ASCII literals looked for in the lower-cased text, for `i` patterns (foldableLower)
//   matchesWithin  a pattern tried only in the runs of non-space around a mark (paths, repos, files)
//   WordHints      hints that are whole words, read in one pass over a sentence's words (the cue families)
//   HintScanner    the lines of a text that hold hints, and which groups of hints each holds (the log redactor)
// A rule whose hints miss one of its matches misses that match silently: each list of hints has a
// property test that every match holds one.
import { escapeRegExp } from "./escape-regexp.js";

/** A literal every match of a rule holds, or, where no literal will do, a regex every match holds a match of. */
export type Hint = string | RegExp;

/** The hints worth searching for: a literal that contains another literal adds nothing, so it is dropped. */
export function minimalHints(hints: Iterable<Hint>): Hint[] {
  const all = [...hints];
  const literals = [...new Set(all.filter((h): h is string => typeof h === "string" && h !== ""))].sort((a, b) => a.length - b.length);
  const kept: Hint[] = [];
  for (const literal of literals) if (!kept.some((shorter) => literal.includes(shorter as string))) kept.push(literal);
  return [...kept, ...all.filter((h): h is RegExp => h instanceof RegExp)];
}

// ---------------------------------------------------------------- one text

/** Whether a text holds any of the hints: one indexOf per literal (memchr speed), one test per regex. */
export function hintTest(hints: Iterable<Hint>): (text: string) => boolean {
  const minimal = minimalHints(hints);
  const literals = minimal.filter((h): h is string => typeof h === "string");
  const patterns = minimal.filter((h): h is RegExp => h instanceof RegExp).map((p) => new RegExp(p.source, p.flags.replace(/[gy]/g, "")));
  if (patterns.length === 0 && literals.length === 1) {
    const [literal] = literals as [string];
    return (text) => text.includes(literal);
  }
  if (patterns.length === 1 && literals.length === 0) {
    const [pattern] = patterns as [RegExp];
    return (text) => pattern.test(text);
  }
  return (text) => literals.some((literal) => text.includes(literal)) || patterns.some((pattern) => pattern.test(text));
}

const FOLDS_TO_ASCII = /[\u017f\u212a]/;
const PRINTABLE_ASCII = /^[\x20-\x7e]*$/;

/** Whether a literal is one that foldableLower's text can be searched for (printable ASCII, lower case). */
export function foldableLiteral(literal: string): boolean {
  return PRINTABLE_ASCII.test(literal) && literal === literal.toLowerCase();
}

/**
 * The text lower-cased, to look for ASCII literals that an `i` pattern's matches hold; null when that could
 * miss one: ſ and K (Kelvin) are the two characters that fold to ASCII letters.
 */
export function foldableLower(text: string): string | null {
  return FOLDS_TO_ASCII.test(text) ? null : text.toLowerCase();
}

// ---------------------------------------------------------------- runs of non-space

const SPACE = /\s/;

/** What `\s` matches, by char code. */
export function isSpace(code: number): boolean {
  return code === 32 || (code >= 9 && code <= 13) || (code > 127 && SPACE.test(String.fromCharCode(code)));
}

const stickies = new WeakMap<RegExp, RegExp>();

/** The pattern tried at one position only. */
function sticky(pattern: RegExp): RegExp {
  let at = stickies.get(pattern);
  if (!at) {
    at = new RegExp(pattern.source, `${pattern.flags.replace("g", "")}y`);
    stickies.set(pattern, at);
  }
  return at;
}

/**
 * The matches `text.matchAll(pattern)` gives, for a `pattern` whose every match lies inside one run of
 * non-whitespace characters and holds a match of the global `mark`: the pattern is tried only in the runs
 * that hold a mark, and the prose around them is left untried.
 */
export function* matchesWithin(pattern: RegExp, text: string, mark: RegExp): Generator<RegExpExecArray> {
  const at = sticky(pattern);
  let from = 0;
  for (;;) {
    mark.lastIndex = from;
    const hit = mark.exec(text);
    if (hit === null) return;
    let start = hit.index;
    while (start > from && !isSpace(text.charCodeAt(start - 1))) start--;
    let end = hit.index + hit[0].length;
    while (end < text.length && !isSpace(text.charCodeAt(end))) end++;
    let found: RegExpExecArray | null = null;
    // Leftmost first, as a scan would find it: a match starting at i is what the pattern finds there.
    for (let i = start; i < end && found === null; i++) {
      at.lastIndex = i;
      found = at.exec(text);
    }
    if (found === null) {
      from = end;
      continue;
    }
    yield found;
    from = found.index + Math.max(1, found[0].length);
  }
}

// ---------------------------------------------------------------- words

/**
 * Hints that are whole words (lower case), for rules tried on a sentence read word by word: each group's
 * bit is set on each of its words, so one lookup per word finds every group the sentence may match.
 * "#digit" stands for any digit in the sentence; other "#" words name what the reader checks itself.
 */
export class WordHints {
  private readonly bits = new Map<string, number>();
  private digits = 0;
  private next = 1;

  /** A new group of word hints; returns its bit. */
  add(words: readonly string[]): number {
    const bit = this.next;
    this.next <<= 1;
    for (const word of words) {
      if (word === "#digit") this.digits |= bit;
      else this.bits.set(word, (this.bits.get(word) ?? 0) | bit);
    }
    return bit;
  }

  /** Each word with the bits of the groups it hints at. */
  get words(): ReadonlyMap<string, number> {
    return this.bits;
  }

  /** The bits of the groups a digit hints at. */
  get digitBits(): number {
    return this.digits;
  }
}

// ---------------------------------------------------------------- lines

// A literal is looked for from its rarest character on (indexOf then runs at memchr speed, and only whole
// finds come back to JavaScript), and the part before that character is checked where it is found:
// searching for "sk-" from its "s" would stop at every s of an English sentence.

/**
 * Characters from most to least costly to search from in log text: lower case by English frequency with
 * the punctuation and digits of timestamps, paths and identifiers among them, "x" early (xxxx
 * placeholders, 0x…), upper case last.
 */
const BY_FREQUENCY = " xetaonisrhldcum.-:/0123456789_wfgypb,=\"'vkjqzETAOINSRHLDCUMWFGYPBVKXJQZ";

function rarity(char: string): number {
  const i = BY_FREQUENCY.indexOf(char);
  return i === -1 ? BY_FREQUENCY.length : i;
}

/** Where a literal is searched from: its rarest character (the first of equals, so more of it is searched for). */
function splitLiteral(literal: string): { prefix: string; search: string } {
  let at = 0;
  for (let i = 1; i < literal.length; i++) if (rarity(literal[i]!) > rarity(literal[at]!)) at = i;
  return { prefix: literal.slice(0, at), search: literal.slice(at) };
}

/** A line holding hints: [start, end) and the bits of the groups whose hints it holds. */
export type HintedLine = readonly [start: number, end: number, groups: number];

const MAX_GROUPS = 8;
/** Texts up to this long are first tested against every hint at once (most drafts' fields, audit values). */
const SHORT_TEXT = 1024;
const GROUP_SPACE = 1 << MAX_GROUPS;

/** Finds the lines of a text that hold any of a fixed set of hints, and which groups of hints each holds. */
export class HintScanner {
  /** For each searched string: the prefixes that must precede it, with their group bits. */
  private readonly searches = new Map<string, Array<{ prefix: string; group: number }>>();
  private readonly patterns: Array<{ pattern: RegExp; group: number }> = [];
  /** Every hint in one alternation: a short text holding none is settled in one pass. */
  private readonly any: RegExp;

  /** Group i's hints set bit 1 << i of a line's groups (at most 8 groups). */
  constructor(groups: ReadonlyArray<Iterable<Hint>>) {
    if (groups.length > MAX_GROUPS) throw new RangeError(`at most ${MAX_GROUPS} groups of hints`);
    groups.forEach((hints, i) => {
      for (const hint of minimalHints(hints)) {
        if (hint instanceof RegExp) {
          this.patterns.push({ pattern: new RegExp(hint.source, "g"), group: 1 << i });
          continue;
        }
        if (hint.includes("\n")) continue;
        const { prefix, search } = splitLiteral(hint);
        const entries = this.searches.get(search) ?? [];
        entries.push({ prefix, group: 1 << i });
        this.searches.set(search, entries);
      }
    });
    const alternatives = [...this.searches].flatMap(([search, entries]) => entries.map((e) => escapeRegExp(e.prefix + search)));
    this.any = new RegExp([...alternatives, ...this.patterns.map((p) => `(?:${p.pattern.source})`)].join("|") || "(?!)");
  }

  /** Each "\n"-separated line of `text` that holds a hint, in order. */
  lines(text: string): HintedLine[] {
    // Past a few hundred characters the searches below (memchr speed) beat one pass of the alternation.
    if (text.length <= SHORT_TEXT && !this.any.test(text)) return [];
    // Each find is start * GROUP_SPACE + group bits, so one numeric sort orders them by line.
    // One indexOf per searched string: it compares the whole string natively, so a common first
    // character costs little (grouping strings by first character and comparing here costs more).
    const finds: number[] = [];
    for (const [search, entries] of this.searches) {
      const all = entries.reduce((bits, e) => bits | e.group, 0);
      let lineStart = 0;
      let lineEnd = -1;
      let found = 0;
      for (let at = text.indexOf(search); at !== -1; at = text.indexOf(search, at + 1)) {
        if (at > lineEnd) {
          if (found !== 0) finds.push(lineStart * GROUP_SPACE + found);
          lineStart = text.lastIndexOf("\n", at) + 1;
          lineEnd = endOfLine(text, at);
          found = 0;
        }
        for (const e of entries) {
          const from = at - e.prefix.length;
          if ((found & e.group) === 0 && (e.prefix === "" || (from >= lineStart && text.startsWith(e.prefix, from)))) found |= e.group;
        }
        // Every group this search can find is found on this line: the rest of the line is settled.
        if (found === all) at = lineEnd;
      }
      if (found !== 0) finds.push(lineStart * GROUP_SPACE + found);
    }
    for (const { pattern, group } of this.patterns) {
      pattern.lastIndex = 0;
      for (let m = pattern.exec(text); m !== null; m = pattern.exec(text)) {
        finds.push((text.lastIndexOf("\n", m.index) + 1) * GROUP_SPACE + group);
        pattern.lastIndex = endOfLine(text, m.index) + 1;
      }
    }
    if (finds.length > 1) finds.sort((a, b) => a - b);
    const lines: HintedLine[] = [];
    for (let i = 0; i < finds.length; ) {
      const start = Math.floor(finds[i]! / GROUP_SPACE);
      let groups = 0;
      for (; i < finds.length && Math.floor(finds[i]! / GROUP_SPACE) === start; i++) groups |= finds[i]! % GROUP_SPACE;
      lines.push([start, endOfLine(text, start), groups]);
    }
    return lines;
  }

  /** `redactLine` applied to each line of `text` that holds a hint; `text` itself when none does. */
  redact(text: string, redactLine: (line: string, groups: number) => string): string {
    const lines = this.lines(text);
    if (lines.length === 0) return text;
    let out = "";
    let kept = 0;
    let changed = false;
    for (const [start, end, groups] of lines) {
      const line = text.slice(start, end);
      const redacted = redactLine(line, groups);
      if (redacted === line) continue;
      out += text.slice(kept, start) + redacted;
      kept = end;
      changed = true;
    }
    return changed ? out + text.slice(kept) : text;
  }

  /** The same for lines given as UTF-8 bytes; `bytes` itself when nothing changed. */
  redactBytes(bytes: Buffer, redactLine: (line: string, groups: number) => string): Buffer {
    const text = bytes.toString("utf8");
    const redacted = this.redact(text, redactLine);
    // Encoded once per changed block: cheaper than a buffer per changed line.
    return redacted === text ? bytes : Buffer.from(redacted, "utf8");
  }
}

function endOfLine(text: string, at: number): number {
  const end = text.indexOf("\n", at);
  return end === -1 ? text.length : end;
}
