// The local mode (LINEAR_LOCAL_FILE): an approval end to end without Linear — a real worker,
// the local review channel, `drafts react … approve` through the built CLI — writes the issue Linear would get to a
// local JSONL file as RA-LOCAL-1, RA-LOCAL-2, …, at most once per draft; Linear is never called.
import { appendFileSync, readFileSync } from "node:fs";
import { join } from "node:path";
import { describe, expect, it } from "vitest";
import { createLogger } from "../../../src/log.js";
import { issueMarker, MARGOT_LABELS } from "../../../src/linear/issues.js";
import { LocalIssues, localTeamKey, type LocalIssue } from "../../../src/linear/local-issues.js";
import { lastJsonLine, runCli } from "../../helpers/cli.js";
import { ACTION_BODY, type MargotScope, useMargotScope } from "../../helpers/margot-scope.js";

let s: MargotScope;
useMargotScope((scope) => (s = scope));

const issuesIn = (path: string): LocalIssue[] =>
  readFileSync(path, "utf8")
    .split("\n")
    .filter(Boolean)
    .map((l) => JSON.parse(l) as LocalIssue);

describe("the local mode (LINEAR_LOCAL_FILE)", () => {
  it("an approval from the CLI becomes RA-LOCAL-1 in the file — what Linear would get — with its audit and ledger rows; the next is RA-LOCAL-2; approving again writes nothing; Linear is never called", async () => {
    const file = join(s.dir.path, "local-issues.jsonl");
    const env = s.localEnv({ LINEAR_API_KEY: undefined, LINEAR_LOCAL_FILE: file, LOG_LEVEL: "info" });
    const worker = await s.worker(env);
    expect(worker.stderr).toContain("the local mode (LINEAR_LOCAL_FILE): approved Margot drafts become issues in that file, not in Linear");

    const first = s.completion(ACTION_BODY);
    const second = s.completion(ACTION_BODY);
    const drafted = [await s.submit(first), await s.submit(second)];
    for (const r of drafted) expect(r.status).toBe("drafted");

    const approve = await runCli(["drafts", "react", drafted[0]!.draft_id!, "approve"], env);
    expect(approve.code, approve.stderr).toBe(0);
    expect(lastJsonLine(approve.stdout)).toMatchObject({
      changed: true,
      state: "approved",
      accepted: { interaction_id: first.interaction_id, linear_issue_identifier: "RA-LOCAL-1" },
    });

    const [issue] = issuesIn(file);
    const draft = await s.draft(drafted[0]!.draft_id!);
    expect(issue).toMatchObject({
      identifier: "RA-LOCAL-1",
      team: "RA",
      project: "RestoreAssist",
      state: "Ready for Pi-Dev",
      labels: [...MARGOT_LABELS],
      title: draft.title,
    });
    expect(issue!.id).toMatch(/^local-[0-9a-f-]{36}$/);
    // The draft as shown, the approval's record, then the marker as its last line: what a Linear issue holds.
    expect(issue!.description.startsWith(draft.body.trimEnd())).toBe(true);
    expect(issue!.description).toMatch(/Approved by Founder via the local review channel/);
    expect(issue!.description.endsWith(`\n---\n${issueMarker(first.interaction_id, draft.marker_nonce!)}\n`)).toBe(true);
    expect(s.auditRows().find((r) => r.type === "margot_intent_accepted")).toMatchObject({
      interaction_id: first.interaction_id,
      linear_issue_identifier: "RA-LOCAL-1",
      linear_issue_id: issue!.id,
    });
    expect(s.ledgerRows(first.interaction_id).find((r) => r.outcome === "accepted")).toMatchObject({ linear_issue_id: issue!.id });
    const show = await runCli(["drafts", "show", drafted[0]!.draft_id!], env);
    expect(show.stdout).toContain("→ RA-LOCAL-1");

    const next = await runCli(["drafts", "react", drafted[1]!.draft_id!, "approve"], env);
    expect(lastJsonLine(next.stdout)).toMatchObject({ accepted: { linear_issue_identifier: "RA-LOCAL-2" } });
    const again = await runCli(["drafts", "react", drafted[0]!.draft_id!, "approve"], env);
    expect(again.code).toBe(1);
    expect(again.stderr).toMatch(/is already approved/);
    expect(issuesIn(file).map((i) => i.identifier)).toEqual(["RA-LOCAL-1", "RA-LOCAL-2"]);
    expect(s.linear.calls).toEqual([]);
  });

  it("a create retried after its line was written (a worker killed before recording it) finds the line by its marker and writes no second one", async () => {
    const file = join(s.dir.path, "retry.jsonl");
    const open = () => new LocalIssues({ path: file, redis: s.redis, prefix: s.prefix, team: "ra", log: createLogger("silent") });
    const request = {
      interactionId: "int-retry",
      markerNonce: "0123456789abcdef0123456789abcdef",
      title: "Add idempotency",
      description: "the draft\n",
      projectName: null,
    };
    const before = open();
    const made = await before.createOnce(request);
    expect(made).toMatchObject({ created: true, issue: { identifier: "RA-LOCAL-1", labels: [...MARGOT_LABELS] } });
    expect(made.issue.url).toBe(`file://${file}#RA-LOCAL-1`);
    await before.close();
    // Another writer killed mid-line leaves a torn last line: skipped, never taken for an issue or an error.
    appendFileSync(file, '{"id":"local-torn","identifier":"RA-LOC');
    // The job's next attempt, in a restarted worker.
    const issues = open();
    const retried = await issues.createOnce(request);
    expect(retried).toEqual({ created: false, issue: made.issue });
    // Another draft's marker in another issue's text is not its marker: only a description's last line counts.
    const other = await issues.createOnce({
      ...request,
      interactionId: "int-other",
      description: `quoting ${issueMarker("int-retry", request.markerNonce)} in the text\n`,
    });
    expect(other).toMatchObject({ created: true, issue: { identifier: "RA-LOCAL-2" } });
    await issues.close();
    expect((await issues.read()).map((i) => i.identifier)).toEqual(["RA-LOCAL-1", "RA-LOCAL-2"]);
  });

  it("the identifier's key is LINEAR_TEAM_ID's when it is a team key, else SCQ", () => {
    expect(localTeamKey("RA")).toBe("RA");
    expect(localTeamKey(" eng2 ")).toBe("ENG2");
    expect(localTeamKey("Restore Assist")).toBe("SCQ");
    expect(localTeamKey("8f0c5a7e-3b1d-4c6a-9e2f-0a1b2c3d4e5f")).toBe("SCQ");
    expect(localTeamKey(undefined)).toBe("SCQ");
  });
});
