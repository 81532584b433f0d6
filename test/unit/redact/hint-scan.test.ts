import { describe, expect, it } from "vitest";
import { HintScanner, minimalHints, type Hint } from "../../../src/redact/hint-scan.js";
import { createRedactor, KEY_SHAPES, REDACTED } from "../../../src/redact/index.js";

/** Deterministic pseudo-random source (mulberry32), so a failure names a reproducible line. */
function random(seed: number): (n: number) => number {
  return (n) => {
    seed = (seed + 0x6d2b79f5) | 0;
    let t = Math.imul(seed ^ (seed >>> 15), 1 | seed);
    t = (t + Math.imul(t ^ (t >>> 7), 61 | t)) ^ t;
    return ((t ^ (t >>> 14)) >>> 0) % n;
  };
}

/** Words of one to three fragments, with separators between them (the shapes want a word start). */
function randomLine(next: (n: number) => number, fragments: readonly string[], maxWords: number): string {
  const separators = [" ", ":", ".", "\t", "=", ""];
  let line = "";
  const words = 1 + next(maxWords);
  for (let i = 0; i < words; i++) {
    const parts = 1 + next(3);
    for (let j = 0; j < parts; j++) line += fragments[next(fragments.length)] ?? "";
    line += separators[next(separators.length)] ?? "";
  }
  return line;
}

// Pieces of every shape's prefix and body, so random lines often hold real matches.
const SHAPE_FRAGMENTS = [
  "sk-", "sk-ant-", "ant-", "api03-", "ghp_", "xoxb-", "proj-", "gh", "p_", "o_", "s_", "github_pat_", "AKIA", "ASIA", "A3T", "ABCDEFGHJKLMNOPQ", "XYZ234567",
  "xox", "b-", "p-", "eyJ", "hbGciOi", "eyJzdWIiOi", ".eyJ", ".", "Bearer ", "bearer\t", "BEARER ", "12345", "678901234", ":", "lin_api_",
  "aB3cD4eF5gH6iJ7kL8mN9", "pQ2rS_-", "aB3cD4eF5gH6iJ7kL8mN9pQ2rSaB3cD4eF5gH6", "aB3cD4eF5gH6iJ7kL8mN9pQ2rS_-aB3cD4", ":AaB3cD4eF5gH6iJ7kL8mN9pQ2rS_-aB3cD4", "x", "-", "_", " ", "0", "Z",
  "postgres", "https", "://", "u", "@", "host", "/",
];

describe("hint scan", () => {
  it("every match of every key shape holds one of that shape's hints", () => {
    const next = random(7);
    const matched = new Map<string, number>();
    for (let i = 0; i < 40_000; i++) {
      const line = randomLine(next, SHAPE_FRAGMENTS, 12);
      for (const shape of KEY_SHAPES) {
        for (const match of line.matchAll(new RegExp(shape.source, "g"))) {
          matched.set(shape.kind, (matched.get(shape.kind) ?? 0) + 1);
          if (!shape.hints.some((hint) => holdsHint(match[0], hint))) throw new Error(`${shape.kind}: ${JSON.stringify(match[0])} holds no hint`);
        }
      }
    }
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
  const FRAGMENTS = [...SHAPE_FRAGMENTS, secret, "A_TOKEN=", "MY_SECRET: ", '"X_KEY":"v"', "\x1b[31m", "\x1b[0m", "-----BEGIN RSA PRIVATE KEY-----", "ü€", "\r", "{", "}"];

  it("equals line() on every line, for random blocks", () => {
    const next = random(11);
    for (let i = 0; i < 3000; i++) {
      const lines = Array.from({ length: 1 + next(8) }, () => randomLine(next, FRAGMENTS, 10));
      const block = Buffer.from(lines.join("\n"), "utf8");
      const out = redactor.bytes(block).toString("utf8");
      expect(out, JSON.stringify(lines)).toBe(lines.map((line) => redactor.line(line)).join("\n"));
    }
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
