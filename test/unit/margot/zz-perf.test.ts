import { test } from "vitest";
import { classify } from "../../../src/margot/classify.js";
import { extractAction } from "../../../src/margot/extract.js";
import { redactPii } from "../../../src/margot/pii.js";
import { destructiveVerbsIn } from "../../../src/margot/destructive.js";
const inputs: Record<string, string> = {
  webhooks: "webhook ".repeat(20000),
  nospace: "a".repeat(100000),
  dashes: "a-".repeat(50000) + "!",
  dots: "a.".repeat(50000),
  digits: "1 ".repeat(50000),
  digitsdots: "1.".repeat(50000),
  colons: "a:".repeat(50000),
  plus: "+1 ".repeat(30000),
  urls: "http://x.internal/" + "a".repeat(100000),
  realistic: ("We should fix the Stripe webhook handler in app/api/stripe/webhook/route.ts so that retries drop to zero. Stripe retries for 3 days; 12% of events fail. " ).repeat(2000),
  longsentence: "We should fix the Stripe webhook handler " + "and the Cloudinary upload route ".repeat(5000),
};
test("perf", () => {
  for (const [name, text] of Object.entries(inputs)) {
    for (const [fn, f] of [["classify", () => classify(text)], ["extract", () => extractAction(text, { projects: [] })], ["pii", () => redactPii(text)], ["destr", () => destructiveVerbsIn(text)]] as const) {
      const t = performance.now(); f(); const ms = performance.now() - t;
      if (ms > 200) console.log(`${name} ${fn} ${ms.toFixed(0)}ms (${text.length} chars)`);
    }
  }
});
