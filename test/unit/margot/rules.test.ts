import { describe, expect, it } from "vitest";
import { classify } from "../../../src/margot/reading/classify.js";
import { readResearch } from "../../../src/margot/reading/reading.js";
import { destructiveVerbsIn } from "../../../src/margot/reading/destructive.js";
import { extractAction } from "../../../src/margot/reading/extract.js";
import type { Project } from "../../../src/margot/projects.js";
import { applyRules, type RulesInput } from "../../../src/margot/bridge/rules.js";

const projects: Project[] = [{ name: "RestoreAssist", repo: "CleanExpo/RestoreAssist" }];

function input(text: string, patch: Partial<RulesInput> = {}): RulesInput {
  const classification = classify(text);
  const action = classification.classification === "action_shaped" ? extractAction(readResearch(text), { projects }) : null;
  return { classification, targetRepo: action?.target_repo ?? null, destructiveVerbs: destructiveVerbsIn(text), projects, suppressedUntil: null, ...patch };
}

const ACTION =
  "We should add idempotency to the Stripe webhook handler in CleanExpo/RestoreAssist by recording processed event ids, so that duplicates stop (target: 0 per month).";

describe("rules, in order", () => {
  it("an allowed action-shaped finding routes to a draft", () => {
    expect(applyRules(input(ACTION))).toEqual({ route: "draft" });
  });

  it("1. loop detection comes first, even before the confidence floor", () => {
    const until = new Date("2026-09-24T00:00:00Z");
    expect(applyRules(input(ACTION, { suppressedUntil: until }))).toMatchObject({
      status: "suppressed",
      reason: "recently_rejected",
      explanation: expect.stringContaining("2026-09-24T00:00:00.000Z"),
    });
    expect(applyRules(input("What's the latest on Next.js 15? Teams report smoother upgrades.", { suppressedUntil: until }))).toMatchObject({
      reason: "recently_rejected",
    });
  });

  it("2. not action-shaped → informational, with why", () => {
    expect(
      applyRules(input("What's the latest on the Next.js 15 release? The notes describe a new caching default and faster builds for most teams.")),
    ).toMatchObject({ status: "informational", reason: "not_action_shaped" });
    expect(applyRules(input("We should do another deep dive on the Cloudinary pricing changes before deciding anything."))).toMatchObject({
      status: "follow_up",
      reason: "research_follow_up",
    });
    expect(applyRules(input("asdf qwer zxcv"))).toMatchObject({ status: "informational", reason: "classification_unknown" });
    expect(applyRules(input("We should improve performance across the board. Users notice slowness."))).toMatchObject({
      status: "informational",
      reason: "confidence_too_low",
    });
    expect(applyRules(input("According to Vercel, teams should move image resizing to the edge."))).toMatchObject({
      status: "informational",
      reason: "confidence_too_low",
    });
  });

  it("3. destructive verbs need ≥ 0.90: 0.80 is suppressed, 0.98 passes", () => {
    const weak = input("The legacy customers table duplicates the accounts table. We should delete the customers table from the RestoreAssist database.");
    expect(weak.classification.confidence).toBe(0.8);
    expect(applyRules(weak)).toMatchObject({ status: "suppressed", reason: "destructive_needs_higher_confidence" });
    const strong = input("We should delete the legacy customers table in the RestoreAssist database so that the nightly backup shrinks by 40%.");
    expect(strong.classification.confidence).toBeGreaterThanOrEqual(0.9);
    expect(applyRules(strong)).toEqual({ route: "draft" });
  });

  it("4. a named repo outside the allowlist is rejected; an undecided repo goes to the founder", () => {
    expect(applyRules(input(ACTION, { targetRepo: "random/repo-not-in-portfolio" }))).toMatchObject({ status: "rejected", reason: "repo_not_allowed" });
    expect(applyRules(input(ACTION, { targetRepo: "cleanexpo/restoreassist" }))).toEqual({ route: "draft" });
    expect(applyRules(input(ACTION, { targetRepo: null }))).toEqual({ route: "draft" });
  });

  it("destructive comes before the allowlist", () => {
    const text = "The legacy customers table duplicates the accounts table. We should delete the customers table from the RestoreAssist database.";
    expect(applyRules(input(text, { targetRepo: "random/elsewhere" }))).toMatchObject({ reason: "destructive_needs_higher_confidence" });
  });
});
