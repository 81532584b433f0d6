// The reading scans a sentence's words in place (word-table.ts) where its letters are ASCII and any other
// sentence through its lower-cased tokens. Both paths must find the same: word and function-word counts, action verbs in
// order, cue trigger bits, modal and surface-noun flags, digits.
import { readFileSync } from "node:fs";
import fc from "fast-check";
import { describe, expect, it } from "vitest";
import { splitSentences } from "../../../src/margot/reading/sentences.js";
import { scanWords, scanWordsGeneral } from "../../../src/margot/reading/words.js";
import { FNV1A_SEED, fnv1aStep } from "../../../src/margot/reading/fnv1a.js";
import { foldAscii, WordTable } from "../../../src/margot/reading/word-table.js";

const fixture = (name: string) => JSON.parse(readFileSync(new URL(`../../fixtures/margot/${name}`, import.meta.url), "utf8"));

function fixtureSentences(): string[] {
  const bodies = [
    ...(fixture("labelled.json").samples as { body: string }[]),
    ...(fixture("held-out.json").samples as { body: string }[]),
    ...(fixture("smoke.json").samples as { body: string }[]),
  ].map((s) => s.body);
  return bodies.flatMap((body) => splitSentences(body));
}

const WORDS = [
  "should", "Should", "SHOULD", "don't", "Don'T", "won't", "codepath", "CodePaths", "code-path", "fix", "Fixing", "add", "the", "The", "not", "no", "deep-dive",
  "follow-up", "re-run", "what's", "p99", "3x", "x-", "-y", "'quoted'", "e.g.", "webhook", "handler", "a1b2", "rate", "latency",
];
const MARKS = [
  " ", "  ", ", ", ". ", "-", "'", "(", ")", "/", "`", "_", "1", "42", "%", ":", "?", "\t", " \u2014 ", "\u2192", "\u2026", "\u00e9", "\u212A", "\u0130",
  "\u{1F600}", "\u00b5", "\u03a3", "\u00a9",
];

describe("word scan in place equals the scan of lower-cased tokens", () => {
  it("on every sentence of the Margot fixtures", () => {
    const sentences = fixtureSentences();
    expect(sentences.length).toBeGreaterThan(400);
    for (const sentence of sentences) expect(scanWords(sentence), sentence).toEqual(scanWordsGeneral(sentence));
  });

  it("on generated sentences of cue words, mixed case, apostrophes, hyphens, digits and marks", () => {
    const sentence = fc
      .array(fc.tuple(fc.constantFrom(...WORDS), fc.constantFrom(...MARKS)), { minLength: 1, maxLength: 12 })
      .map((parts) => parts.map(([word, mark]) => word + mark).join(""));
    fc.assert(
      fc.property(sentence, (text) => {
        expect(scanWords(text)).toEqual(scanWordsGeneral(text));
      }),
      { numRuns: 3000 },
    );
  });

  it("reads Latin letters, and characters that lower-case to letters, as the tokens do", () => {
    expect(scanWords("We should fix the café's webhook handler").words).toBe(7);
    expect(scanWords("We should fix the caf\u00e9's webhook handler")).toEqual(scanWordsGeneral("We should fix the caf\u00e9's webhook handler"));
    // The Kelvin sign lower-cases to an ASCII k: a word letter only after lower-casing.
    expect(scanWords("\u212Aeep it").words).toBe(2);
  });

  it("counts the words, their flags and the n't trigger as the tokens do", () => {
    const scan = scanWords("We shouldn't Fix it; the CodePath fix-up won't ADD 3 retries.");
    expect(scan.words).toBe(10);
    expect(scan.actionVerbs).toEqual(["fix", "add"]);
    expect(scan.surfaceNoun).toBe(true);
    expect(scan).toEqual(scanWordsGeneral("We shouldn't Fix it; the CodePath fix-up won't ADD 3 retries."));
  });
});

describe("WordTable", () => {
  const hash = (text: string, start: number, end: number) => {
    let h = FNV1A_SEED;
    for (let i = start; i < end; i++) h = fnv1aStep(h, foldAscii(text.charCodeAt(i)));
    return h;
  };

  it("finds a word where it stands, ASCII case folded, and nothing else", () => {
    const words = Array.from({ length: 500 }, (_, i) => `w${i.toString(36)}`);
    const table = new WordTable(words.map((w, i) => [w, i + 1] as const));
    for (const [i, w] of words.entries()) {
      const text = `xx ${w.toUpperCase()} yy`;
      expect(table.get(text, 3, 3 + w.length, hash(text, 3, 3 + w.length))).toBe(i + 1);
    }
    for (const missing of ["w", "wzzz", "w-1", "x"]) expect(table.get(missing, 0, missing.length, hash(missing, 0, missing.length))).toBe(0);
  });
});
