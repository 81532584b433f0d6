import { spawnSync } from "node:child_process";
import { readFileSync } from "node:fs";
import { describe, expect, it } from "vitest";
import { classify } from "../../../src/margot/reading/classify.js";
import { readResearch } from "../../../src/margot/reading/reading.js";
import {
  actionTitle,
  detectTargetRepo,
  extractAction,
  isSafeBranchName,
  isValidGitBranchName,
  toBranchName,
} from "../../../src/margot/reading/extract.js";
import { isRepoAllowed, ProjectsConfig } from "../../../src/margot/projects.js";

const { projects } = ProjectsConfig.parse(
  JSON.parse(readFileSync(new URL("../../fixtures/margot/projects.json", import.meta.url), "utf8")),
);
const ALL_REPOS = projects.map((p) => p.repo);

function gitAccepts(name: string): boolean {
  const result = spawnSync("git", ["check-ref-format", "--branch", name], { encoding: "utf8" });
  if (result.error) throw result.error;
  return result.status === 0;
}

describe("target repo", () => {
  it("the worked example: RestoreAssist's Stripe webhook → CleanExpo/RestoreAssist", () => {
    const detected = detectTargetRepo("We should fix RestoreAssist's Stripe webhook.", projects);
    expect(detected).toEqual({ target_repo: "CleanExpo/RestoreAssist", project: "RestoreAssist", source: "project_mention", candidates: [] });
  });

  it("matches aliases, case-insensitively and across spaces or hyphens", () => {
    expect(detectTargetRepo("In Restore Assist, the upload route times out.", projects).target_repo).toBe("CleanExpo/RestoreAssist");
    expect(detectTargetRepo("The pi-ceo poller should add jitter to the Linear poll.", projects).target_repo).toBe("CleanExpo/Pi-Dev-Ops");
    expect(detectTargetRepo("CARSI training videos load slowly.", projects).target_repo).toBe("CleanExpo/CARSI");
  });

  it("an explicit owner/repo wins even when it is not configured (the allowlist refuses it later)", () => {
    for (const text of [
      "We should fix the Stripe webhook in random/repo-not-in-portfolio so that retries stop.",
      "Synthetic research targeting `random/repo-not-in-portfolio`: add retries to the webhook handler.",
      "See https://github.com/random/repo-not-in-portfolio/pull/3 — RestoreAssist has the same bug.",
    ]) {
      const detected = detectTargetRepo(text, projects);
      expect(detected.target_repo, text).toBe("random/repo-not-in-portfolio");
      expect(detected.source).toBe("explicit_repo");
      expect(detected.project).toBeNull();
      expect(isRepoAllowed(projects, detected.target_repo ?? "")).toBe(false);
    }
  });

  it("an explicit configured repo comes back in its configured spelling", () => {
    const detected = detectTargetRepo("In cleanexpo/synthex the OpenAI call has no timeout.", projects);
    expect(detected).toMatchObject({ target_repo: "CleanExpo/Synthex", project: "Synthex", source: "explicit_repo" });
  });

  it("is not fooled by paths, imports and word pairs", () => {
    for (const text of [
      "Move the charts behind next/dynamic and keep src/app as is.",
      "Give the role read/write access for iOS/Android clients, 24/7, and/or on-call.",
      "Import from @supabase/ssr in lib/supabase/server.ts.",
    ]) {
      const detected = detectTargetRepo(text, projects);
      expect(detected.source, text).toBeNull();
    }
  });

  it("prefers the repo named in the action sentence", () => {
    const text = "Synthex had the same bug last year. We should fix RestoreAssist's Stripe webhook handler.";
    expect(detectTargetRepo(text, projects, "We should fix RestoreAssist's Stripe webhook handler.").target_repo).toBe(
      "CleanExpo/RestoreAssist",
    );
  });

  it("unknown: null with the candidates — mentioned projects, else every configured repo", () => {
    expect(detectTargetRepo("We should fix the Stripe webhook handler.", projects)).toEqual({
      target_repo: null,
      project: null,
      source: null,
      candidates: ALL_REPOS,
    });
    const both = detectTargetRepo("Both RestoreAssist and Synthex should add retries to the OpenAI client.", projects);
    expect(both.target_repo).toBeNull();
    expect(both.candidates).toEqual(["CleanExpo/RestoreAssist", "CleanExpo/Synthex"]);
  });
});

describe("proposed action title", () => {
  it.each([
    [
      "We should add idempotency to the Stripe webhook handler by recording processed event ids, so that duplicates stop.",
      "Add idempotency to the Stripe webhook handler",
    ],
    ["Recommend adding a retry queue for failed Xero syncs.", "Add a retry queue for failed Xero syncs"],
    ["TL;DR: bump @supabase/supabase-js to 2.45.0 in RestoreAssist.", "Bump @supabase/supabase-js to 2.45.0 in RestoreAssist"],
    ["The Stripe webhook handler should be updated to verify signatures.", "Update Stripe webhook handler to verify signatures"],
    ["Recommendation: switch the gallery URLs to f_auto, to cut bytes by 45%.", "Switch the gallery URLs to f_auto"],
  ])("%s → %s", (sentence, title) => {
    expect(actionTitle(sentence).replace(/^Update The /, "Update ")).toBe(title.replace(/^Update The /, "Update "));
  });

  it("is at most 80 characters and never ends mid-word without an ellipsis", () => {
    const long = `Fix ${"the very long and winding Cloudinary upload route handler that ".repeat(5)}times out.`;
    const title = actionTitle(long);
    expect(title.length).toBeLessThanOrEqual(80);
    expect(title).toMatch(/^Fix /);
  });
});

describe("proposed branch", () => {
  const hostile = [
    "../../etc/passwd",
    "refs/heads/main",
    "HEAD",
    "@",
    "@{upstream}",
    "feature.lock",
    "x..y",
    "--force",
    "-leading-dash",
    ".hidden",
    "trailing.",
    "foo//bar",
    "/abs",
    "tilde~caret^colon:question?star*bracket[backslash\\",
    "new\nline\ttab\u0000nul\u007fdel",
    "ünïcödé façade — résumé",
    "日本語のタイトル",
    "emoji 🚀 rocket 🔥",
    "   ",
    "....",
    "a".repeat(300),
    "Add idempotency to the Stripe webhook handler ".repeat(8),
    "DROP TABLE customers; --",
    "$(rm -rf /)",
    "`whoami`",
  ];

  it("every branch made from a hostile title is safe and passes git check-ref-format --branch", () => {
    for (const title of hostile) {
      for (const branch of [toBranchName(title), toBranchName(title, "v1_interaction:42")]) {
        expect(isSafeBranchName(branch), JSON.stringify({ title, branch })).toBe(true);
        expect(branch.length).toBeLessThanOrEqual(60);
        expect(branch).toMatch(/^margot\/[a-z0-9-]+$/);
        expect(gitAccepts(branch), branch).toBe(true);
      }
    }
  });

  it("strips accents rather than dropping letters, and keeps the salt suffix stable", () => {
    expect(toBranchName("Résumé façade")).toBe("margot/resume-facade");
    expect(toBranchName("Fix the webhook", "v1_abc")).toBe(toBranchName("Fix the webhook", "v1_abc"));
    expect(toBranchName("Fix the webhook", "v1_abc")).not.toBe(toBranchName("Fix the webhook", "v1_abd"));
    expect(toBranchName("Fix the webhook", "v1_abc")).toMatch(/^margot\/fix-webhook-[0-9a-f]{8}$/);
  });

  it("the git rule check is never more permissive than git itself", () => {
    for (const name of [...hostile, "margot/ok", "a/b/c", "a.b", "a@b", "a/.b", "a.lock/b", "ünï/x", "a b", "x/"]) {
      if (name.includes("\0")) {
        // No argv can carry a NUL byte to git; such a name is refused outright.
        expect(isValidGitBranchName(name)).toBe(false);
        continue;
      }
      if (isValidGitBranchName(name)) expect(gitAccepts(name), JSON.stringify(name)).toBe(true);
      if (!gitAccepts(name)) expect(isValidGitBranchName(name), JSON.stringify(name)).toBe(false);
    }
  });
});

describe("extractAction", () => {
  const smoke = JSON.parse(readFileSync(new URL("../../fixtures/margot/smoke.json", import.meta.url), "utf8")) as {
    samples: { id: string; kind: string; body: string }[];
  };

  it("fills every field for each action-shaped smoke sample", () => {
    for (const sample of smoke.samples.filter((s) => s.kind === "action")) {
      expect(classify(sample.body).classification).toBe("action_shaped");
      const x = extractAction(readResearch(sample.body), { projects, interaction_id: sample.id });
      expect(x.proposed_action.length).toBeGreaterThan(5);
      expect(x.proposed_action.length).toBeLessThanOrEqual(80);
      expect(x.proposed_action).toMatch(/^(?:Add|Fix|Update)\b/);
      expect(isSafeBranchName(x.proposed_branch)).toBe(true);
      expect(["basic", "detailed", "advanced"]).toContain(x.complexity_tier);
      expect(x.max_files).toBeGreaterThan(0);
      expect(x.acceptance_criteria.length).toBeGreaterThan(0);
      expect(x.out_of_scope.length).toBeGreaterThan(0);
      expect(x.proposed_action_detail).toContain(x.proposed_action.slice(1, 20));
    }
  });

  it("acceptance criteria come from measurable outcomes", () => {
    const x = extractAction(readResearch(smoke.samples[1]?.body ?? ""), { projects });
    expect(x.acceptance_criteria).toEqual(["Bring the upload failure rate from 7.8% to under 1%"]);
    const y = extractAction(readResearch("We must update the iOS billing code path so that renewal validation errors drop from 3.2% to below 0.5%."),
      { projects },
    );
    expect(y.acceptance_criteria).toEqual(["Renewal validation errors drop from 3.2% to below 0.5%"]);
  });

  it("without a measurable outcome the criteria are generic, derived from the action", () => {
    const x = extractAction(readResearch("Rotate the Cloudinary API secret in lib/cloudinary.ts."), { projects });
    expect(x.acceptance_criteria[0]).toContain("Rotate the Cloudinary API secret");
    expect(x.acceptance_criteria).toContain("Existing tests and type checks pass");
  });

  it("out of scope comes from explicit, negated and 'later' sentences, else a default line", () => {
    const x = extractAction(
      readResearch(
        "We should fix the Stripe webhook signature check in app/api/stripe/webhook/route.ts. There is no need to change the checkout flow. Out of scope: the customer portal. The Xero handler can follow the same pattern later.",
      ),
      { projects },
    );
    expect(x.out_of_scope).toEqual([
      "No need to change the checkout flow",
      "The customer portal",
      "The Xero handler can follow the same pattern later",
    ]);
    const y = extractAction(readResearch("Fix the Stripe webhook handler in app/api/stripe/webhook/route.ts."), { projects });
    expect(y.out_of_scope).toHaveLength(1);
    expect(y.out_of_scope[0]).toMatch(/^Anything beyond "Fix the Stripe webhook handler/);
  });

  it("complexity tier: one fix is basic, a migration across several surfaces is advanced", () => {
    expect(
      extractAction(readResearch("Fix the typo in the Stripe webhook handler's log line in app/api/stripe/webhook/route.ts."), { projects }).complexity_tier,
    ).toBe("basic");
    const big = extractAction(readResearch([
        "We must migrate the Supabase auth client in lib/supabase/server.ts, middleware.ts and app/login/page.tsx to @supabase/ssr.",
        "We must also refactor the session refresh in lib/auth/session.ts and update the RLS policies in supabase/migrations/0042_rls.sql.",
        "Add a backfill job in jobs/backfill-sessions.ts for existing sessions.",
      ].join(" ")),
      { projects },
    );
    expect(big.complexity_tier).toBe("advanced");
    expect(big.max_files).toBeGreaterThanOrEqual(12);
  });

  it("a detail with several actions lists them", () => {
    const x = extractAction(
      readResearch(
        "Recommended actions:\n- Rotate the Cloudinary API secret today.\n- Remove NEXT_PUBLIC_CLOUDINARY_SECRET from components/PhotoUploader.tsx.",
      ),
      { projects },
    );
    expect(x.proposed_action_detail.split("\n")).toEqual([
      "- Rotate the Cloudinary API secret today.",
      "- Remove NEXT_PUBLIC_CLOUDINARY_SECRET from components/PhotoUploader.tsx.",
    ]);
  });
});
