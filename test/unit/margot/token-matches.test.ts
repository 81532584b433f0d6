import { readFileSync } from "node:fs";
import { describe, expect, it } from "vitest";
import { detectTargetRepo } from "../../../src/margot/reading/extract.js";
import { foldableLower, matchesWithin } from "../../../src/hints.js";

const fixture = (name: string) => JSON.parse(readFileSync(new URL(`../../fixtures/margot/${name}`, import.meta.url), "utf8"));

const bodies: string[] = ["labelled.json", "held-out.json", "smoke.json"].flatMap((name) => {
  const data = fixture(name) as { samples: { body: string }[]; follow_ups?: { body: string }[] };
  return [...data.samples, ...(data.follow_ups ?? [])].map((s) => s.body);
});
const made = [
  "see app/api/stripe/webhook/route.ts and lib/a.ts, `CleanExpo/RestoreAssist` and owner/name. Also a/b/c/d.ts/x",
  "read/write ios/android 24/7 next.js node.js foo.test.ts, ./scripts/run.sh and ../x/y.py; src/x.tsx) (lib/y.jsx.",
  "slashes / alone / and .ts alone, a.ts.ts, @scope/pkg/x.ts, [id]/page.tsx, x/ y /z",
  "",
];

describe("matchesWithin: a pattern tried only where its mark is", () => {
  const cases: Array<[string, RegExp, RegExp]> = [
    ["repo pairs", /(?<![\w@./:-])`?([A-Za-z0-9][A-Za-z0-9-]{0,38})\/([A-Za-z0-9._-]{1,100})`?(?![\w/-])/g, /\//g],
    [
      "code paths",
      /(?<![\w@])(?:[\w.@[\]-]+\/)+[\w.[\]-]+\.(?:tsx?|jsx?|mjs|cjs|py|swift|kt|java|rb|go|rs|sql|json|ya?ml|toml|css|scss|html|prisma|sh)\b|(?<![\w/.-])[\w-]+\.(?:tsx?|jsx?|swift|py|sql|prisma|kt)\b/g,
      /\.(?:tsx?|jsx?|mjs|cjs|py|swift|kt|java|rb|go|rs|sql|json|ya?ml|toml|css|scss|html|prisma|sh)\b/g,
    ],
  ];
  for (const [name, pattern, mark] of cases) {
    it(`${name}: the same matches as matchAll, in order, on every fixture body and made-up text`, () => {
      let total = 0;
      for (const text of [...bodies, ...made, bodies.join("\n\n")]) {
        const expected = [...text.matchAll(pattern)].map((m) => [m.index, ...m]);
        expect([...matchesWithin(pattern, text, mark)].map((m) => [m.index, ...m]), text).toEqual(expected);
        total += expected.length;
      }
      expect(total).toBeGreaterThan(10);
    });
  }
});

describe("foldableLower", () => {
  it("lower-cases a text unless it holds a character that folds to an ASCII letter (ſ, K)", () => {
    expect(foldableLower("RestoreAssist — Ünïcode ≥ 2")).toBe("restoreassist — ünïcode ≥ 2");
    expect(foldableLower("reſtoreassist")).toBeNull();
    expect(foldableLower("\u212aelvin")).toBeNull();
  });

  it("a project named with ſ or K (Kelvin) for its letters is still found", () => {
    const projects = [{ name: "RestoreAssist", repo: "CleanExpo/RestoreAssist" }];
    expect(detectTargetRepo("We should fix the reſtoreassist webhook.", projects).target_repo).toBe("CleanExpo/RestoreAssist");
    expect(detectTargetRepo("We should fix the RestoreAssist webhook.", projects).target_repo).toBe("CleanExpo/RestoreAssist");
    expect(detectTargetRepo("We should fix the webhook.", projects).target_repo).toBeNull();
  });
});
