import { describe, expect, it } from "vitest";
import { classify } from "../../../src/margot/classify.js";
import { readResearch } from "../../../src/margot/reading.js";
import { destructiveVerbsIn } from "../../../src/margot/destructive.js";
import { extractAction } from "../../../src/margot/extract.js";
import { redactPii } from "../../../src/margot/pii.js";

// Shapes that make careless regexes quadratic or worse. A worker must not hang on any of them.
const inputs: Record<string, string> = {
  "one long token": "a".repeat(100_000),
  "dashed token": `${"a-".repeat(50_000)}!`,
  "dotted token": "a.".repeat(50_000),
  "dotted digits": "1.".repeat(50_000),
  "colon pairs": "a:".repeat(50_000),
  "plus ones": "+1 ".repeat(30_000),
  "one long sentence": `We should fix the Stripe webhook handler ${"and the Cloudinary upload route ".repeat(5_000)}`,
  "a huge URL": `http://x.internal/${"a".repeat(100_000)}`,
  // Each line joined to the paragraph before it: a test of the joined text per line was quadratic (23 s).
  "a hard-wrapped paragraph that never ends a sentence": Array.from({ length: 12_000 }, () => "lorem ipsum dolor sit amet consectetur adipiscing elit sed do eiusmod tempor").join("\n"),
  // A fence with no line end after it: the fence pattern was retried from every backtick (60 KB took 1.8 s).
  "a run of backticks": "`".repeat(200_000),
  "a long report": "We should fix the Stripe webhook handler in app/api/stripe/webhook/route.ts so that retries drop to zero. Stripe retries for 3 days; 12% of events fail. ".repeat(1_000),
};

describe("hostile input", () => {
  it.each(Object.entries(inputs))("%s: every pure step finishes quickly", (_name, text) => {
    const started = performance.now();
    classify(text);
    extractAction(readResearch(text), { projects: [] });
    redactPii(text);
    destructiveVerbsIn(text);
    // Generous for shared CI machines; the quadratic versions took tens of seconds.
    expect(performance.now() - started).toBeLessThan(5_000);
  });
});
