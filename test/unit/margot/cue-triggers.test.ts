// A cue family's trigger words are hand-kept: a sentence holding none of them skips the family's patterns
// (cues.ts). So every match of every pattern must hold a trigger among the words the reading sees (words.ts:
// each word, its pieces between hyphens, each without a possessive), else the reading misses a cue the
// patterns would find. The same holds for MODAL and its trigger words (directives.ts).
import fc from "fast-check";
import { describe, expect, it } from "vitest";
import { CUE_GROUPS } from "../../../src/margot/reading/cues.js";
import { MODAL, MODAL_TRIGGERS } from "../../../src/margot/reading/directives.js";
import { scanWords, scanWordsGeneral, type TokenScan } from "../../../src/margot/reading/words.js";

interface Family {
  readonly name: string;
  readonly patterns: readonly RegExp[];
  readonly triggers: readonly string[];
  /** Whether the reading's word scan of a sentence says to try the family. */
  readonly tried: (scan: TokenScan) => boolean;
}

const FAMILIES: readonly Family[] = [
  ...Object.entries(CUE_GROUPS).map(([name, group]) => ({
    name,
    patterns: group.patterns,
    triggers: group.triggers,
    tried: (scan: TokenScan) => (scan.bits & group.bit) !== 0,
  })),
  { name: "modal", patterns: [MODAL], triggers: [...MODAL_TRIGGERS], tried: (scan: TokenScan) => scan.modal },
];

/**
 * The words of a sentence where the reading sees them, [start, end, word in lower case]: each run of letters,
 * "'" and "-", the pieces of it between its hyphens, and each of those without a possessive "'s" or "'".
 */
function wordsAt(text: string): Array<readonly [number, number, string]> {
  const found: Array<readonly [number, number, string]> = [];
  const add = (at: number, word: string) => found.push([at, at + word.length, word], [at, at + word.replace(/'s?$/, "").length, word.replace(/'s?$/, "")]);
  for (const m of text.matchAll(/[A-Za-z][A-Za-z'-]*/g)) {
    const word = m[0].toLowerCase();
    add(m.index, word);
    let at = m.index;
    for (const piece of word.split("-")) {
      add(at, piece);
      at += piece.length + 1;
    }
  }
  return found;
}

/** Whether the match `text.slice(start, end)` holds one of the triggers, as the reading looks for them; `words`: wordsAt(text). */
function holdsTrigger(text: string, words: ReturnType<typeof wordsAt>, start: number, end: number, triggers: readonly string[]): boolean {
  if (triggers.includes("#digit") && /\d/.test(text.slice(start, end))) return true;
  return words.some(([from, to, word]) => from < end && to > start && (triggers.includes(word) || (triggers.includes("#n't") && word.endsWith("n't"))));
}

/** The words a family's patterns name and its triggers: sentences of them, among other words, make its matches likely. */
function wordsOf(family: Family): string[] {
  const named = family.patterns.flatMap((p) => p.source.replace(/\\[a-zA-Z]/g, " ").match(/[a-z]{2,}/gi) ?? []);
  return [...new Set([...family.triggers.filter((t) => !t.startsWith("#")), ...named])];
}
const OTHER_WORDS = [
  "we", "the", "a", "Apple", "Stripe", "docs", "it", "X", "team", "webhook", "churn", "3", "42", "10", "0", "p99", "5%", "ms", "can't", "don't", "shouldn't",
];
// Mostly spaces; apostrophes as English has them: a possessive, or inside a contraction.
const SEPARATORS = ["-", "'s ", "' ", ", ", ": ", "; ", ". ", "\t", "  ", "%", "[", "]", "(", ")", "$", "_", "n't "];
const CASES = [(w: string) => w, (w: string) => w.toUpperCase(), (w: string) => w.charAt(0).toUpperCase() + w.slice(1)];

const sentence = fc.constantFrom(...FAMILIES).chain((family) => {
  const word = fc.oneof({ arbitrary: fc.constantFrom(...wordsOf(family)), weight: 4 }, { arbitrary: fc.constantFrom(...OTHER_WORDS), weight: 1 });
  const separator = fc.oneof({ arbitrary: fc.constant(" "), weight: 4 }, { arbitrary: fc.constantFrom(...SEPARATORS), weight: 1 });
  return fc
    .array(fc.tuple(word, fc.constantFrom(...CASES), separator), { minLength: 1, maxLength: 12 })
    .map((parts) => parts.map(([w, casing, sep]) => casing(w) + sep).join(""));
});

describe("cue triggers", () => {
  it("every match of every cue pattern holds one of its family's trigger words", () => {
    const matched = new Map<string, number>();
    fc.assert(
      fc.property(sentence, (text) => {
        const words = wordsAt(text);
        for (const family of FAMILIES) {
          for (const pattern of family.patterns) {
            for (const match of text.matchAll(new RegExp(pattern.source, pattern.flags.includes("g") ? pattern.flags : `${pattern.flags}g`))) {
              if (match[0] === "") continue;
              matched.set(family.name, (matched.get(family.name) ?? 0) + 1);
              const end = match.index + match[0].length;
              expect(
                holdsTrigger(text, words, match.index, end, family.triggers),
                `${family.name}: ${JSON.stringify(match[0])} in ${JSON.stringify(text)}`,
              ).toBe(true);
            }
          }
        }
      }),
      { numRuns: 30_000 },
    );
    // Each family was really matched, so the check could have failed for it.
    for (const family of FAMILIES) expect(matched.get(family.name) ?? 0, family.name).toBeGreaterThan(0);
  });

  it("the reading's word scan tries every family a pattern of which matches the sentence", () => {
    fc.assert(
      fc.property(sentence, (text) => {
        const scans = [scanWords(text), scanWordsGeneral(text)];
        for (const family of FAMILIES) {
          if (!family.patterns.some((pattern) => new RegExp(pattern.source, pattern.flags.replace("g", "")).test(text))) continue;
          for (const scan of scans) expect(family.tried(scan), `${family.name} in ${JSON.stringify(text)}`).toBe(true);
        }
      }),
      { numRuns: 30_000 },
    );
  });
});
