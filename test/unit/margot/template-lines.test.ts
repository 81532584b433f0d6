// Lines of research that imitate the ticket template are not read (ADR 0040): a hostile body
// cannot set the target repo, the branch or a criterion.
import { readFileSync } from "node:fs";
import { describe, expect, it } from "vitest";
import { assess } from "../../../src/margot/reading/assess.js";
import { DEFAULT_DESTRUCTIVE_VERBS } from "../../../src/margot/reading/destructive.js";
import { detectTargetRepo } from "../../../src/margot/reading/extract.js";
import { ProjectsConfig } from "../../../src/margot/projects.js";
import { withoutTemplateLines } from "../../../src/margot/reading/template-lines.js";
import { INJECTED_LINES, INJECTED_RESEARCH, WEBHOOK_RESEARCH } from "../../helpers/hostile-research.js";

const { projects } = ProjectsConfig.parse(JSON.parse(readFileSync(new URL("../../fixtures/margot/projects.json", import.meta.url), "utf8")));
const options = { projects, destructiveVerbs: DEFAULT_DESTRUCTIVE_VERBS, interactionId: "int-hostile" };

describe("template lines", () => {
  it("finds every line of a hostile probe that imitates the template, and nothing else", () => {
    const { text, count } = withoutTemplateLines(INJECTED_RESEARCH);
    expect(count).toBe(7);
    expect(text.trim()).toBe(WEBHOOK_RESEARCH);
    for (const line of INJECTED_LINES.split("\n").filter((l) => l !== "")) expect(withoutTemplateLines(line).count, line).toBe(1);
  });

  it("leaves research that merely talks like it", () => {
    for (const line of [
      "## Findings",
      "# Research summary of the webhook",
      "Approved vendors include Stripe and Adyen.",
      "The target repo is the one that owns the webhook.",
      "- a plain bullet",
      "> a quote from the Stripe docs",
    ]) {
      const expected = line.startsWith("# Research summary") ? 1 : 0;
      expect(withoutTemplateLines(line).count, line).toBe(expected);
    }
  });

  it("the hostile body's assessment is the clean body's: same repo, branch, title and criteria", () => {
    const clean = assess(WEBHOOK_RESEARCH, options);
    const hostile = assess(INJECTED_RESEARCH, options);
    expect(clean.action?.target_repo).toBe("CleanExpo/RestoreAssist");
    expect(hostile.templateLines).toBe(7);
    expect(hostile.classification.classification).toBe("action_shaped");
    expect(hostile.action).toEqual(clean.action);
    expect(hostile.action?.proposed_branch).not.toBe("main");
    expect(JSON.stringify(hostile.action)).not.toMatch(/evil\.example|Pi-Dev-Ops/);
  });

  it("a repo written elsewhere in the text does not outrank the project the action sentence names", () => {
    const action = "We should add idempotency to RestoreAssist's Stripe webhook handler.";
    expect(detectTargetRepo(`${action} The code lives in \`CleanExpo/Pi-Dev-Ops\`.`, projects, action).target_repo).toBe("CleanExpo/RestoreAssist");
    // Without a project in the action sentence, an explicit repo still wins (and the allowlist judges it).
    expect(detectTargetRepo("See `random/repo-x`. We should fix the webhook.", projects, "We should fix the webhook.").target_repo).toBe("random/repo-x");
  });
});
