import fc from "fast-check";
import { describe, expect, it } from "vitest";
import { HintScanner, minimalHints, type Hint } from "../../../src/hints.js";
import { createLineRedactor, createRedactor, KEY_SHAPES, REDACTED } from "../../../src/redact/index.js";

/** Words of one to three fragments, with separators between them (the shapes want a word start). */
function lineOf(fragments: readonly string[], maxWords: number): fc.Arbitrary<string> {
  const word = fc.tuple(fc.array(fc.constantFrom(...fragments), { minLength: 1, maxLength: 3, size: "max" }), fc.constantFrom(" ", ":", ".", "\t", "=", ""));
  return fc.array(word, { minLength: 1, maxLength: maxWords, size: "max" }).map((words) => words.map(([parts, sep]) => parts.join("") + sep).join(""));
}

// Pieces of every shape's prefix and body, so random lines often hold real matches.
const SHAPE_FRAGMENTS = [
  "sk-", "sk-ant-", "ant-", "api03-", "ghp_", "xoxb-", "proj-", "gh", "p_", "o_", "s_", "github_pat_", "AKIA", "ASIA", "A3T", "ABCDEFGHJKLMNOPQ", "XYZ234567",
  "xox", "b-", "p-", "eyJ", "hbGciOi", "eyJzdWIiOi", ".eyJ", ".", "Bearer ", "bearer\t", "BEARER ", "12345", "678901234", ":", "lin_api_",
  "aB3cD4eF5gH6iJ7kL8mN9", "pQ2rS_-", "aB3cD4eF5gH6iJ7kL8mN9pQ2rSaB3cD4eF5gH6", "aB3cD4eF5gH6iJ7kL8mN9pQ2rS_-aB3cD4", ":AaB3cD4eF5gH6iJ7kL8mN9pQ2rS_-aB3cD4",
  "x", "-", "_", " ", "0", "Z", "postgres", "https", "://", "u", "@", "host", "/", "sk_live_", "rk_test_", "whsec_", "glpat-", "AIza", "xoxo-",
];

describe("hint scan", () => {
  it("every match of every key shape holds one of that shape's hints", () => {
    const matched = new Map<string, number>();
    fc.assert(
      fc.property(lineOf(SHAPE_FRAGMENTS, 12), (line) => {
        for (const shape of KEY_SHAPES) {
          for (const match of line.matchAll(new RegExp(shape.source, "g"))) {
            matched.set(shape.kind, (matched.get(shape.kind) ?? 0) + 1);
            expect(shape.hints.some((hint) => holdsHint(match[0], hint)), `${shape.kind}: ${JSON.stringify(match[0])} holds no hint`).toBe(true);
          }
        }
      }),
      { numRuns: 40_000 },
    );
    // Each shape was really exercised, so the check above could have failed for it.
    for (const shape of KEY_SHAPES) expect(matched.get(shape.kind) ?? 0, shape.kind).toBeGreaterThan(0);
  });

  it("drops hints that contain a shorter hint", () => {
    expect(minimalHints(["sk-ant-", "sk-", "_TOKEN", "A_TOKEN_X", "", "sk-"])).toEqual(["sk-", "_TOKEN"]);
  });

  it("finds each line holding a hint once, in order, with the groups of the hints it holds", () => {
    const scanner = new HintScanner([["_KEY"], ["sk-", /:!/]]);
    expect(scanner.lines("a _KEY b\nplain: no\nsk- and _KEY\n\nlast sk- sk-\nyes :!")).toEqual([
      [0, 8, 1],
      [19, 31, 3],
      [33, 45, 2],
      [46, 52, 2],
    ]);
    expect(scanner.lines("nothing: here")).toEqual([]);
  });

  it("tells the groups apart when their hints share an anchor character", () => {
    // "_KEY" and "AKIA" are both found by their K.
    const scanner = new HintScanner([["_KEY"], ["AKIA"]]);
    expect(scanner.lines("AKIA then A_KEY=1")).toEqual([[0, 17, 3]]);
  });

  it("finds a hint among many near-misses of its first character", () => {
    const scanner = new HintScanner([["sk-"]]);
    const prose = "this sentence has lots of s's and says nothing secret ".repeat(50);
    expect(scanner.lines(`${prose}\nsk-\n${prose}`)).toEqual([[prose.length + 1, prose.length + 4, 1]]);
  });
});

/** Whether `text` holds the hint somewhere, its confirmation included. */
function holdsHint(text: string, hint: Hint): boolean {
  return new HintScanner([[hint]]).lines(text).length > 0;
}

describe("redactor.bytes", () => {
  const secret = "s3cr3t-välue-0123";
  const redactor = createRedactor({ secrets: [secret] });
  const FRAGMENTS = [
    ...SHAPE_FRAGMENTS,
    secret,
    "A_TOKEN=",
    "MY_SECRET: ",
    '"X_KEY":"v"',
    "\x1b[31m",
    "\x1b[0m",
    "-----BEGIN RSA PRIVATE KEY-----",
    "ü€",
    "\r",
    "{",
    "}",
  ];

  it("text() of many lines equals the line redactor on each line, for random texts", () => {
    fc.assert(
      fc.property(fc.array(lineOf(FRAGMENTS, 10), { minLength: 1, maxLength: 8, size: "max" }), (lines) => {
        // The reference: split at every line end text() knows, each line through one line redactor.
        const each = createLineRedactor(redactor);
        const text = lines.join("\n");
        const parts = text.split(/(\r\n|\n|\r)/).map((part, i) => (i % 2 === 0 ? each(part) : part));
        expect(redactor.text(text)).toBe(parts.join(""));
      }),
      { numRuns: 5000 },
    );
  });

  it("equals line() on every line, for random blocks", () => {
    fc.assert(
      fc.property(fc.array(lineOf(FRAGMENTS, 10), { minLength: 1, maxLength: 8, size: "max" }), (lines) => {
        const out = redactor.bytes(Buffer.from(lines.join("\n"), "utf8")).toString("utf8");
        expect(out).toBe(lines.map((line) => redactor.line(line)).join("\n"));
      }),
      { numRuns: 3000 },
    );
  });

  it("returns the very same buffer when no line needs redacting", () => {
    const clean = Buffer.from("nothing\nto see: here\n€ and ü");
    expect(redactor.bytes(clean)).toBe(clean);
  });

  it("masks a secret with non-ASCII characters and keeps the other lines' bytes", () => {
    const out = redactor.bytes(Buffer.from(`ok ü\nvalue=${secret}\nA_TOKEN=abc`)).toString("utf8");
    expect(out).toBe(`ok ü\nvalue=${REDACTED}\n***=[REDACTED]`);
  });
});
