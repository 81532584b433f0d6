// Fault: the worker is SIGKILLed while an approved draft's Linear issue is being created (Linear has made it,
// its answer has not come back). Guarantee: one draft and at most one Linear issue, however often it is retried.
// (Kills between the draft and its records are in test/integration/margot/crash.test.ts.)
import { describe, expect, it } from "vitest";
import { lastJsonLine, runCli, waitFor } from "../../helpers/cli.js";
import { ACTION_BODY, type MargotScope, useMargotScope } from "../../helpers/margot-scope.js";

let s: MargotScope;
useMargotScope((scope) => (s = scope));

describe("worker SIGKILL mid margot-intent", () => {
  it("killed while issueCreate is unanswered: no retry creates a second issue; approved again, the issue is found by its marker", async () => {
    const first = await s.worker(s.localEnv());
    const c = s.completion(ACTION_BODY);
    const drafted = await s.submit(c);
    expect(drafted.status).toBe("drafted");
    // Linear creates the issue but answers only in a minute: the worker dies waiting.
    s.linear.answerLate("MargotIssueCreate", 60_000);
    const react = runCli(["drafts", "react", drafted.draft_id!, "approve", "--wait-timeout", "60"], s.localEnv(), { timeoutMs: 90_000 });
    await waitFor(() => s.linear.issues.length === 1, 30_000, () => "Linear to have created the issue");
    first.child.kill("SIGKILL");
    await first.waitExit();

    await s.worker(s.localEnv());
    // The retries meet the dead worker's creation lease (5 min, ADR 0004) and give up saying so; none creates.
    const outcome = await react;
    expect(outcome.code).toBe(1);
    expect(outcome.stderr).toMatch(/the Linear issue for draft \S+ is being created by another job/);
    expect(s.linear.issues).toHaveLength(1);
    expect(s.linear.count("MargotIssueCreate")).toBe(1);
    expect((await s.draft(drafted.draft_id!)).state).toBe("approved");

    // The lease lapses (the test ends it rather than wait 5 minutes); approving again finds the issue by its marker.
    const leases = await s.redis.keys(`${s.prefix}*:lease:linear`);
    expect(leases).toHaveLength(1);
    await s.redis.del(...leases);
    const again = await runCli(["drafts", "react", drafted.draft_id!, "approve", "--wait-timeout", "60"], s.localEnv(), { timeoutMs: 90_000 });
    expect(again.code, again.stderr).toBe(0);
    expect(lastJsonLine(again.stdout)).toMatchObject({ state: "approved", accepted: { draft_id: drafted.draft_id, linear_issue_id: s.linear.issues[0]!.id } });
    expect(s.linear.issues).toHaveLength(1);
    expect(s.linear.count("MargotIssueCreate")).toBe(1);
    expect((await s.drafts.list()).length).toBe(1);
    await waitFor(() => s.ledgerRows(c.interaction_id).some((r) => r.outcome === "accepted"), 5000, () => "the accepted ledger row");
    expect(s.ledgerRows(c.interaction_id).map((r) => r.outcome)).toEqual(["drafted", "accepted"]);
  }, 120_000);
});
