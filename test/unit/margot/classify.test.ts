import { readFileSync } from "node:fs";
import { describe, expect, it } from "vitest";
import { ACTION_CONFIDENCE_FLOOR, classify, type Classification } from "../../../src/margot/reading/classify.js";
import { splitSentences } from "../../../src/margot/reading/sentences.js";

interface Sample {
  id: string;
  expected: Classification;
  kind?: string;
  body: string;
}

function load(name: string): Sample[] {
  const data = JSON.parse(readFileSync(new URL(`../../fixtures/margot/${name}`, import.meta.url), "utf8")) as { samples: Sample[] };
  return data.samples;
}

const isAction = (text: string) => classify(text).classification === "action_shaped";

describe("positive cues", () => {
  it("a directive + action verb + named surface + measurable outcome is action-shaped, with every cue listed", () => {
    const text =
      "Duplicate Stripe events are double-crediting accounts. We must fix the Stripe webhook handler in app/api/stripe/webhook/route.ts so that duplicate events are ignored and double credits drop to zero.";
    const result = classify(text);
    expect(result.classification).toBe("action_shaped");
    expect(result.confidence).toBeGreaterThanOrEqual(ACTION_CONFIDENCE_FLOOR);
    expect(result.signals.action_sentence).toMatch(/^We must fix the Stripe webhook handler/);
    expect(result.signals.action_verbs).toEqual(expect.arrayContaining(["must", "fix"]));
    expect(result.signals.code_surfaces).toEqual(expect.arrayContaining(["app/api/stripe/webhook/route.ts"]));
    expect(result.signals.code_surfaces.some((s) => /Stripe webhook handler/.test(s))).toBe(true);
    expect(result.signals.measurable_outcomes.length).toBeGreaterThan(0);
  });

  it.each([
    "Implement retries with backoff in the Cloudinary upload route so the upload failure rate drops below 1%.",
    "We need to remove the unused lodash import from components/JobTable.tsx to cut 70 KB from the bundle.",
    "Update the iOS billing code path to read entitlements from Transaction.currentEntitlements.",
    "You should add an index on jobs (organisation_id, status) in a new Supabase migration; p95 goes from 2.3 s to 35 ms.",
    "Recommendation: move the PDF export in app/api/reports/route.ts to a background job.",
  ])("clear recommendation is action-shaped: %s", (text) => {
    const result = classify(text);
    expect(result.classification).toBe("action_shaped");
    expect(result.confidence).toBeGreaterThanOrEqual(0.75);
  });

  it("picks the strongest actionable sentence as the action sentence", () => {
    const text = [
      "The Resend webhook handler answers 500 for unknown event types.",
      "Someone should look at the logging at some point.",
      "Update the Resend webhook handler in app/api/webhooks/resend/route.ts to return 200 for unknown types, so that retries drop to zero.",
      "Resend retries for up to 8 hours.",
    ].join(" ");
    expect(classify(text).signals.action_sentence).toMatch(/^Update the Resend webhook handler/);
  });

  it("a vague directive with no code surface stays below the floor", () => {
    const result = classify("We should improve performance across the board. Users notice slowness.");
    expect(result.classification).not.toBe("action_shaped");
  });

  it("scores are deterministic, in 0..1 with two decimals", () => {
    for (const sample of [...load("smoke.json"), ...load("labelled.json")]) {
      const a = classify(sample.body);
      expect(classify(sample.body)).toEqual(a);
      expect(a.confidence).toBeGreaterThanOrEqual(0);
      expect(a.confidence).toBeLessThanOrEqual(1);
      expect(Math.round(a.confidence * 100) / 100).toBe(a.confidence);
    }
  });
});

describe("not fooled by", () => {
  it.each([
    "We could consider adding retries to the Stripe webhook handler to cut failures by 20%.",
    "It might be worth adding an index to the jobs table used by app/api/jobs/route.ts.",
    "You may want to update the Cloudinary upload route to use signed uploads, which could cut failures by 5%.",
    "Perhaps we should migrate lib/supabase/server.ts to @supabase/ssr eventually.",
    "Consider moving the chart components in app/dashboard/page.tsx behind next/dynamic.",
  ])("hedges: %s", (text) => {
    const result = classify(text);
    expect(result.classification).not.toBe("action_shaped");
    expect(result.signals.hedges.length).toBeGreaterThan(0);
  });

  it.each([
    "There is no need to change the Stripe webhook handler in app/api/stripe/webhook/route.ts; it already verifies signatures.",
    "We should not update the iOS billing code path until Apple ships the new StoreKit API.",
    "We don't need to migrate the Supabase auth client in lib/supabase/server.ts this quarter.",
    "The Cloudinary upload route does not need to be changed: failures are at 0.2%.",
    "No changes are required to the pricing page in app/pricing/page.tsx.",
  ])("negation: %s", (text) => {
    const result = classify(text);
    expect(result.classification).toBe("informational");
    expect(result.signals.negations.length).toBeGreaterThan(0);
  });

  it.each([
    "Should we add rate limiting to the /api/auth/otp endpoint to cut SMS costs by 50%?",
    "Do we need to fix the Stripe webhook handler in app/api/stripe/webhook/route.ts before the launch?",
    "Would it help to cache the Stripe price list in app/pricing/page.tsx for 10 minutes?",
  ])("questions are unknown (the third class, ADR 0016), never action: %s", (text) => {
    const result = classify(text);
    expect(result.classification).toBe("unknown");
    expect(result.signals.unknown_reason).toBe("question");
    expect(result.signals.questions.length).toBeGreaterThan(0);
  });

  it.each([
    "What's the latest on the Stripe Node SDK? Version 17 was released last week with types for the 2024-09-30 API version.",
    "Cloudinary announced a new Plus plan at USD 99 a month; competitors in the image CDN market have held prices.",
    "Supabase is now generally available in the Sydney region, and branching shipped to all paid plans.",
  ])("pure intel: %s", (text) => {
    const result = classify(text);
    expect(result.classification).toBe("informational");
    expect(result.signals.intel.length).toBeGreaterThan(0);
  });

  it.each([
    "We should do another deep dive on Supabase connection pooling before changing lib/db.ts.",
    "Research further how Xero rate-limits webhook deliveries to app/api/webhooks/xero/route.ts.",
    "Investigate more whether the iOS billing code path double-counts renewals, then come back with a recommendation.",
    "We need to investigate the Stripe webhook handler's latency spikes before deciding anything.",
  ])("research follow-ups: %s", (text) => {
    const result = classify(text);
    expect(result.classification).toBe("informational");
    expect(result.signals.research_follow_up.length).toBeGreaterThan(0);
  });

  it("reported advice from a third party", () => {
    const result = classify("Stripe's docs say you should verify webhook signatures in the Stripe webhook handler.");
    expect(result.classification).not.toBe("action_shaped");
  });

  it("a scoping negation next to a real action keeps it action-shaped", () => {
    const text =
      "We should fix the Stripe webhook signature check in app/api/stripe/webhook/route.ts to use a 300 s tolerance. There is no need to change the checkout flow.";
    expect(classify(text).classification).toBe("action_shaped");
  });
});

describe("unknown", () => {
  it.each([
    ["", "empty"],
    ["   \n\t", "empty"],
    ["ok", "too_short"],
    ["Stripe webhook.", "too_short"],
    ["asdf qwer zxcv uiop hjkl bnm", "incoherent"],
    ["```\n{\"state\": \"FAILED\"}\n```", "no_prose"],
    ["Margot could not complete this research: the upstream request timed out.", "research_failed"],
  ])("%j → %s", (text, reason) => {
    const result = classify(text);
    expect(result.classification).toBe("unknown");
    expect(result.signals.unknown_reason).toBe(reason);
  });

  it("mixed equal evidence: an action and its own negation", () => {
    const text =
      "We should move the Cloudinary upload route to signed direct uploads to cut failures by 7%. There is no need to move the Cloudinary upload route to signed direct uploads yet.";
    const result = classify(text);
    expect(result.classification).toBe("unknown");
    expect(result.signals.unknown_reason).toBe("mixed_evidence");
    expect(result.signals.conflicts).toHaveLength(1);
  });
});

describe("the destructive-verb gate's example", () => {
  it('"delete the customers table" is action-shaped at 0.80: over the 0.75 floor, under the 0.90 destructive floor', () => {
    const result = classify("Delete the customers table.");
    expect(result.classification).toBe("action_shaped");
    expect(result.confidence).toBeGreaterThanOrEqual(0.75);
    expect(result.confidence).toBeLessThan(0.9);
  });
});

describe("sentences", () => {
  it("splits on sentence ends, bullets and headings, not on abbreviations, versions or file names", () => {
    const text = "## Findings\nThe route.ts file uses Next.js 14.1.0, e.g. in app/page.tsx. It is slow.\n- Fix it; then ship.";
    expect(splitSentences(text)).toEqual([
      "Findings",
      "The route.ts file uses Next.js 14.1.0, e.g. in app/page.tsx.",
      "It is slow.",
      "Fix it",
      "then ship.",
    ]);
  });
});

describe("the third class: questions, placeholders, inconclusive findings", () => {
  it.each([
    ["Which of our repositories still use the old Sentry SDK?", "question"],
    ["TODO: findings go here.", "placeholder"],
    ["## Summary\n\n[Insert summary]\n\n## Recommendation\n\n[TBD]", "placeholder"],
    ["The cache experiment was inconclusive: hit rates moved by less than the noise between runs.", "inconclusive"],
    ["The two sources contradict each other on whether the Stripe SDK retries are safe, and we could not reproduce either claim.", "inconclusive"],
  ])("%s → unknown (%s)", (text, reason) => {
    const result = classify(text);
    expect(result.classification).toBe("unknown");
    expect(result.signals.unknown_reason).toBe(reason);
  });

  it("an intel question (\"what's the latest on X?\") stays informational", () => {
    expect(classify("What's the latest on Bun? Version 1.2 was released with a built-in S3 client and Postgres driver.").classification).toBe("informational");
  });

  it("a concrete change with a stated expected outcome is action-shaped", () => {
    const result = classify("We should replace the XML parser in lib/feeds/parse.ts with fast-xml-parser. Expected outcome: the feed import stops timing out.");
    expect(result.classification).toBe("action_shaped");
    expect(result.confidence).toBeGreaterThanOrEqual(ACTION_CONFIDENCE_FLOOR);
  });

  it("a negation about the same thing by pronoun cancels the action (mixed evidence)", () => {
    const result = classify("We should enable HTTP/2 push on the CDN config to cut load time by 20%. Push breaks older proxies, so we should not enable it.");
    expect(result.classification).toBe("unknown");
    expect(result.signals.unknown_reason).toBe("mixed_evidence");
  });
});

describe("smoke set (the Margot bridge's verification, check 2)", () => {
  const samples = load("smoke.json");

  it("holds the smoke set's mix: 3 action, 3 informational, 2 unknown, 2 ambiguous", () => {
    const kinds = samples.map((s) => s.kind);
    expect(samples).toHaveLength(10);
    expect(kinds.filter((k) => k === "action")).toHaveLength(3);
    expect(kinds.filter((k) => k === "informational")).toHaveLength(3);
    expect(kinds.filter((k) => k === "unknown")).toHaveLength(2);
    expect(kinds.filter((k) => k === "ambiguous")).toHaveLength(2);
  });

  it("classifies at least 8 of 10 correctly (the bar), and in fact all 10", () => {
    const results = samples.map((s) => ({ s, r: classify(s.body) }));
    const correct = results.filter(({ s, r }) => r.classification === s.expected);
    console.log(`margot smoke: ${correct.length}/${samples.length}`);
    expect(correct.length).toBeGreaterThanOrEqual(8);
    expect(Object.fromEntries(results.map(({ s, r }) => [s.id, r.classification]))).toEqual(
      Object.fromEntries(samples.map((s) => [s.id, s.expected])),
    );
  });

  it("confidence is consistent with the expectation", () => {
    for (const s of samples) {
      const r = classify(s.body);
      if (s.kind === "action") expect(r.confidence, s.id).toBeGreaterThanOrEqual(0.75);
      if (s.kind === "ambiguous") {
        // Hedged: informational, less sure than plain intel, with the hedge named.
        expect(r.signals.hedges.length, s.id).toBeGreaterThan(0);
        expect(r.confidence, s.id).toBeLessThan(0.9);
      }
      if (s.kind === "informational") expect(r.confidence, s.id).toBeGreaterThanOrEqual(0.75);
    }
  });
});

describe("labelled set", () => {
  const samples = load("labelled.json");

  it("has at least 40 uniquely named, validly labelled samples of every label", () => {
    expect(samples.length).toBeGreaterThanOrEqual(40);
    expect(new Set(samples.map((s) => s.id)).size).toBe(samples.length);
    for (const label of ["action_shaped", "informational", "unknown"] as const) {
      expect(samples.filter((s) => s.expected === label).length).toBeGreaterThanOrEqual(5);
    }
  });

  it("classifies at least 90% correctly", () => {
    const wrong = samples.filter((s) => classify(s.body).classification !== s.expected);
    const score = (samples.length - wrong.length) / samples.length;
    console.log(
      `margot labelled: ${samples.length - wrong.length}/${samples.length} (${(score * 100).toFixed(1)}%)` +
        (wrong.length > 0 ? `; misclassified: ${wrong.map((s) => `${s.id} (expected ${s.expected}, got ${classify(s.body).classification})`).join(", ")}` : ""),
    );
    expect(score).toBeGreaterThanOrEqual(0.9);
  });

  it("never routes a non-action sample to action (false positives cost founder attention)", () => {
    const falsePositives = samples.filter((s) => s.expected !== "action_shaped" && isAction(s.body)).map((s) => s.id);
    expect(falsePositives).toEqual([]);
  });
});
