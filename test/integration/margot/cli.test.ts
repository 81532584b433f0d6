// The Margot side of the CLI contract: enqueue --wait, classify, drafts list/show/react.
import { writeFileSync } from "node:fs";
import { join } from "node:path";
import { describe, expect, it } from "vitest";
import { MargotIntentResult } from "../../../src/margot/contract.js";
import { lastJsonLine, runCli } from "../../helpers/cli.js";
import { ACTION_BODY, INFORMATIONAL_BODY, type MargotScope, useMargotScope } from "../../helpers/margot-scope.js";

let s: MargotScope;
useMargotScope((scope) => (s = scope));

describe("margot CLI", () => {
  it("enqueue margot-intent --completion FILE --wait prints the job line first and the MargotIntentResult last", async () => {
    await s.worker(s.localEnv());
    const file = join(s.dir.path, "completion.json");
    const c = s.completion(ACTION_BODY);
    writeFileSync(file, JSON.stringify(c));
    const res = await runCli(["enqueue", "margot-intent", "--completion", file, "--wait"], s.localEnv());
    expect(res.code, res.stderr).toBe(0);
    const lines = res.stdout.trim().split("\n");
    expect(JSON.parse(lines[0]!)).toEqual({ queue: "margot-intent", job_id: `intent-${c.interaction_id}` });
    const result = MargotIntentResult.parse(lastJsonLine(res.stdout));
    expect(result).toMatchObject({
      interaction_id: c.interaction_id,
      classification: "action_shaped",
      status: "drafted",
      target_repo: "CleanExpo/RestoreAssist",
    });
    expect(Object.keys(result).sort()).toEqual([
      "action_summary", "classification", "confidence", "draft_id", "interaction_id", "reason", "skipped_reason", "status", "target_repo",
    ]);
  });

  it("classify --text-file FILE and - print one JSON line with classification, confidence, signals, target_repo, route", async () => {
    const file = join(s.dir.path, "body.txt");
    writeFileSync(file, ACTION_BODY);
    const env = s.env();
    const fromFile = await runCli(["classify", "--text-file", file], env);
    expect(fromFile.code, fromFile.stderr).toBe(0);
    expect(fromFile.stdout.trim().split("\n")).toHaveLength(1);
    const line = JSON.parse(fromFile.stdout) as Record<string, unknown>;
    expect(line).toMatchObject({
      classification: "action_shaped",
      target_repo: "CleanExpo/RestoreAssist",
      proposed_action: expect.stringMatching(/^Add idempotency to the Stripe webhook handler/),
      route: { status: "drafted", reason: null },
      destructive_verbs: [],
    });
    expect(line.confidence).toBeGreaterThanOrEqual(0.75);
    expect(line.signals).toMatchObject({ action_verbs: expect.arrayContaining(["should", "add"]) });
    expect(String(line.proposed_branch)).toMatch(/^margot\/[a-z0-9-]+$/);

    const fromStdin = await runCli(["classify", "--text-file", "-"], env, { input: INFORMATIONAL_BODY });
    expect(JSON.parse(fromStdin.stdout)).toMatchObject({ classification: "informational", target_repo: null, route: { status: "informational" } });
    const missing = await runCli(["classify"], env);
    expect(missing.code).toBe(1);
    expect(missing.stderr).toMatch(/classify needs --text-file/);
  });

  it("drafts list, show and react on the local channel", async () => {
    await s.worker(s.localEnv());
    const result = await s.submit(s.completion(ACTION_BODY));
    const id = result.draft_id!;
    const list = await runCli(["drafts", "list"], s.localEnv());
    expect(list.stdout).toMatch(new RegExp(`${id}\\s+posted\\s+Add idempotency`));
    expect(list.stdout).toMatch(/waiting for a reaction, expires 20/);
    expect(list.stdout).toMatch(/rate limit: 1 of 5 drafts in the last 86400 s, 0 waiting/);
    const show = await runCli(["drafts", "show", id], s.localEnv());
    expect(show.stdout).toContain("## Acceptance criteria");
    expect(show.stdout).toContain(`in the local review channel draft \`${id}\``);
    expect(show.stdout).not.toContain("Telegram");
    const bad = await runCli(["drafts", "react", id, "maybe"], s.localEnv());
    expect(bad.code).toBe(1);
    expect(bad.stderr).toMatch(/unknown reaction "maybe": takes approve, reject or defer/);
    const none = await runCli(["drafts", "react", "d-000000000000", "approve"], s.localEnv());
    expect(none.stderr).toMatch(/no draft d-000000000000/);
    const react = await runCli(["drafts", "react", id, "defer"], s.localEnv());
    expect(react.code, react.stderr).toBe(0);
    expect(lastJsonLine(react.stdout)).toMatchObject({ draft_id: id, reaction: "defer", changed: true, state: "deferred" });
    const after = lastJsonLine((await runCli(["drafts", "list", "--json"], s.localEnv())).stdout) as {
      drafts: Array<{ state: string }>;
      notices: Array<{ text: string }>;
    };
    expect(after.drafts[0]!.state).toBe("deferred");
    expect(after.notices[0]!.text).toMatch(new RegExp(`draft ${id} deferred; it comes back at 20`));
  });
});
