import { readFileSync } from "node:fs";
import { describe, expect, it } from "vitest";
import {
  describeContractError,
  MargotActionAccepted,
  MargotIntentResult,
  MargotResearchCompletion,
} from "../../../src/margot/contract.js";
import { isRepoAllowed, ProjectsConfig, projectSpellings } from "../../../src/margot/projects.js";

const completion = {
  interaction_id: "v1_ChdkZWVwX3Jlc2VhcmNo",
  body: "We should fix the Stripe webhook.",
  originated_at: "2026-09-17T03:04:05Z",
  originating_session_id: "pi-ceo-session-42",
};

function errorOf(schema: { safeParse: (v: unknown) => { success: boolean; error?: unknown } }, value: unknown): string {
  const result = schema.safeParse(value);
  expect(result.success).toBe(false);
  return describeContractError(result.error as never);
}

describe("MargotResearchCompletion", () => {
  it("accepts its four fields: interaction_id, body, originated_at, originating_session_id", () => {
    expect(MargotResearchCompletion.parse(completion)).toEqual(completion);
    expect(MargotResearchCompletion.parse({ ...completion, originated_at: "2026-09-17T13:04:05.123+10:00" })).toBeTruthy();
  });

  it("refuses an unknown field, naming it", () => {
    expect(errorOf(MargotResearchCompletion, { ...completion, priority: 1 })).toContain("priority: unknown field");
  });

  it("refuses missing or wrongly typed fields, naming each", () => {
    const message = errorOf(MargotResearchCompletion, { interaction_id: "x1", body: 3 });
    expect(message).toContain("body");
    expect(message).toContain("originated_at");
    expect(message).toContain("originating_session_id");
  });

  it("refuses an empty body and a non-ISO timestamp", () => {
    expect(errorOf(MargotResearchCompletion, { ...completion, body: "" })).toContain("body: body must not be empty");
    expect(errorOf(MargotResearchCompletion, { ...completion, originated_at: "yesterday" })).toContain("originated_at");
  });

  it.each([
    ["", "must not be empty"],
    ["run:42", "must not contain ':'"],
    ["12345", "must not be all digits"],
    ["-7", "must not be all digits"],
    ["has space", "whitespace"],
    ["tick`tock", "backticks"],
    ["x".repeat(257), "at most 256"],
  ])("refuses interaction_id %j (%s): it is also the BullMQ job id", (id, expected) => {
    expect(errorOf(MargotResearchCompletion, { ...completion, interaction_id: id })).toContain(expected);
  });

  it("accepts ids BullMQ accepts", () => {
    for (const id of ["v1_abc", "0123abc", "interactions/abc-123", "a.b_c-d=="]) {
      expect(MargotResearchCompletion.safeParse({ ...completion, interaction_id: id }).success).toBe(true);
    }
  });
});

describe("MargotIntentResult", () => {
  const drafted = {
    interaction_id: "v1_abc",
    classification: "action_shaped",
    confidence: 0.92,
    action_summary: "Add idempotency to the Stripe webhook handler",
    target_repo: "CleanExpo/RestoreAssist",
    draft_id: "draft-1",
    skipped_reason: null,
    status: "drafted",
    reason: null,
  };

  it("accepts a result's fields, interaction_id through skipped_reason, plus status and reason", () => {
    expect(MargotIntentResult.parse(drafted)).toEqual(drafted);
    const informational = {
      ...drafted,
      classification: "informational",
      confidence: 0.9,
      action_summary: null,
      target_repo: null,
      draft_id: null,
      skipped_reason: "Not action-shaped: informational research",
      status: "informational",
      reason: "not_action_shaped",
    };
    expect(MargotIntentResult.parse(informational).reason).toBe("not_action_shaped");
    expect(MargotIntentResult.parse({ ...informational, status: "rejected", reason: "repo_not_allowed" }).status).toBe("rejected");
    expect(MargotIntentResult.parse({ ...drafted, status: "queued_rate_limit", reason: "rate_limited" }).status).toBe("queued_rate_limit");
    expect(MargotIntentResult.parse({ ...drafted, status: "suppressed", reason: "recently_rejected" }).status).toBe("suppressed");
    expect(MargotIntentResult.parse({ ...drafted, status: "suppressed", reason: "destructive_needs_higher_confidence" }).reason).toBe(
      "destructive_needs_higher_confidence",
    );
    expect(MargotIntentResult.parse({ ...drafted, status: "duplicate", reason: "duplicate_interaction" }).status).toBe("duplicate");
  });

  it("refuses a reason outside the closed set", () => {
    expect(errorOf(MargotIntentResult, { ...drafted, status: "informational", reason: "felt_like_it" })).toContain("reason");
  });

  it("refuses a reason that does not go with the status", () => {
    expect(errorOf(MargotIntentResult, { ...drafted, reason: "rate_limited" })).toContain("reason must be null when status is drafted");
    expect(errorOf(MargotIntentResult, { ...drafted, status: "rejected", reason: "rate_limited" })).toContain(
      "does not go with status rejected",
    );
    expect(errorOf(MargotIntentResult, { ...drafted, status: "suppressed", reason: null })).toContain("reason is required");
  });

  it("refuses unknown fields, bad confidence and bad classification", () => {
    expect(errorOf(MargotIntentResult, { ...drafted, extra: true })).toContain("extra: unknown field");
    expect(errorOf(MargotIntentResult, { ...drafted, confidence: 1.5 })).toContain("confidence");
    expect(errorOf(MargotIntentResult, { ...drafted, classification: "action-shaped" })).toContain("classification");
  });
});

describe("MargotActionAccepted", () => {
  it("accepts its five fields (the verification's identifier RA-VERIFY-1 too)", () => {
    const accepted = {
      interaction_id: "v1_abc",
      draft_id: "draft-1",
      linear_issue_id: "9cfb482a-81e3-4154-b5b9-2c805e70a02d",
      linear_issue_identifier: "RA-VERIFY-1",
      labels_applied: ["pi-dev:autonomous", "sandcastle:high-isolation", "margot:originated"],
    };
    expect(MargotActionAccepted.parse(accepted)).toEqual(accepted);
    expect(errorOf(MargotActionAccepted, { ...accepted, linear_issue_identifier: "" })).toContain("linear_issue_identifier");
    expect(errorOf(MargotActionAccepted, { ...accepted, labels: [] })).toContain("labels: unknown field");
  });
});

describe("ProjectsConfig", () => {
  const fixture = JSON.parse(readFileSync(new URL("../../fixtures/margot/projects.json", import.meta.url), "utf8"));

  it("parses the documented format", () => {
    const config = ProjectsConfig.parse(fixture);
    expect(config.projects.map((p) => p.repo)).toContain("CleanExpo/RestoreAssist");
  });

  it("refuses a bad repo, an unknown field, and a repo listed twice", () => {
    expect(errorOf(ProjectsConfig, { projects: [{ name: "X", repo: "not a repo" }] })).toContain("projects.0.repo");
    expect(errorOf(ProjectsConfig, { projects: [{ name: "X", repo: "a/b", team: "t" }] })).toContain("projects.0.team: unknown field");
    expect(errorOf(ProjectsConfig, { projects: [{ name: "X", repo: "a/b" }, { name: "Y", repo: "A/B" }] })).toContain(
      "listed twice",
    );
    expect(errorOf(ProjectsConfig, { projects: [{ name: "X", repo: "a/.." }] })).toContain("repo");
  });

  it("allowlist compares repos case-insensitively, as GitHub does", () => {
    const { projects } = ProjectsConfig.parse(fixture);
    expect(isRepoAllowed(projects, "cleanexpo/restoreassist")).toBe(true);
    expect(isRepoAllowed(projects, "random/repo-not-in-portfolio")).toBe(false);
  });

  it("spellings include name, repo name and aliases once each", () => {
    expect(projectSpellings({ name: "RestoreAssist", repo: "CleanExpo/RestoreAssist", aliases: ["Restore Assist"] })).toEqual([
      "RestoreAssist",
      "Restore Assist",
    ]);
  });
});
