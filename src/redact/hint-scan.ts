// Most log lines hold no secret. Every rule names hints, literals that each of its matches holds, so a
// line holding none of them is kept as it is without running the rules' regexes, which cost several
// nanoseconds per character on every character. A literal is looked for from its rarest character on
// (indexOf then runs at memchr speed, and only whole finds come back to JavaScript), and the part before
// that character is checked where it is found: searching for "sk-" from its "s" would stop at every s
// of an English sentence.

import { escapeRegExp } from "./literal-trie.js";

/** A literal every match of a rule holds, or, where no literal will do, a global regex every match holds a match of. */
export type Hint = string | RegExp;

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

/** The hints worth searching for: a literal that contains another literal adds nothing, so it is dropped. */
export function minimalHints(hints: Iterable<Hint>): Hint[] {
  const all = [...hints];
  const literals = [...new Set(all.filter((h): h is string => typeof h === "string" && h !== ""))].sort((a, b) => a.length - b.length);
  const kept: Hint[] = [];
  for (const literal of literals) if (!kept.some((shorter) => literal.includes(shorter as string))) kept.push(literal);
  return [...kept, ...all.filter((h): h is RegExp => h instanceof RegExp)];
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
