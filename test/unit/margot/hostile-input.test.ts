import { describe, expect, it } from "vitest";
import { classify } from "../../../src/margot/reading/classify.js";
import { readResearch } from "../../../src/margot/reading/reading.js";
import { destructiveVerbsIn } from "../../../src/margot/reading/destructive.js";
import { extractAction } from "../../../src/margot/reading/extract.js";
import { redactPii } from "../../../src/margot/bridge/pii.js";
import { withoutTemplateLines } from "../../../src/margot/reading/template-lines.js";
import { quoteResearch } from "../../../src/margot/ticket.js";

const REPORT =
  "We should fix the Stripe webhook handler in app/api/stripe/webhook/route.ts so that retries drop to zero. Stripe retries for 3 days; 12% of events fail. ";

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
  // Each line joined to the paragraph before it: testing the joined text at each line is quadratic.
  "a hard-wrapped paragraph that never ends a sentence": Array.from(
    { length: 12_000 },
    () => "lorem ipsum dolor sit amet consectetur adipiscing elit sed do eiusmod tempor",
  ).join("\n"),
  // A fence with no line end after it: a fence pattern retried from every backtick is quadratic.
  "a run of backticks": "`".repeat(200_000),
  // The template-line pattern's prefixes: marks and non-letters that could precede a field name or "approved".
  "a line of marks": `${"*>_-".repeat(50_000)}target rep`,
  "a line of punctuation": `${"!?. ".repeat(50_000)}approve`,
  "a long report": REPORT.repeat(1_000),
};

describe("hostile input", () => {
  it.each(Object.entries(inputs))("%s: every pure step finishes quickly", (_name, text) => {
    const started = performance.now();
    classify(text);
    extractAction(readResearch(text), { projects: [] });
    redactPii(text);
    destructiveVerbsIn(text);
    withoutTemplateLines(text);
    quoteResearch(text);
    // Generous for shared CI machines; the quadratic versions took tens of seconds.
    expect(performance.now() - started).toBeLessThan(5_000);
  });
});
