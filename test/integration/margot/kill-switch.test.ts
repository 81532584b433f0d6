// The kill switch reaches Margot. While it is on nothing is posted and no Linear issue
// is created (the autonomy poller would turn one into a run); drafts and approvals wait and
// proceed when it goes off; the review channel hears of it once.
import { describe, expect, it } from "vitest";
import { lastJsonLine, runCli, waitFor } from "../../helpers/cli.js";
import { ACTION_BODY, type MargotScope, useMargotScope } from "../../helpers/margot-scope.js";

let s: MargotScope;
useMargotScope((scope) => (s = scope));

const killswitch = async (action: "on" | "off") => {
  const res = await runCli(["killswitch", action], s.env());
  expect(res.code, res.stderr).toBe(0);
};
const killNotices = () => s.telegram.notices().filter((n) => /kill switch is on/.test(n.text));

describe("the kill switch holds Margot", () => {
  it("drafts wait while it is on (one notice), and are posted when it goes off", async () => {
    await s.worker();
    await killswitch("on");
    const a = await s.submit(s.completion(ACTION_BODY));
    const b = await s.submit(s.completion(ACTION_BODY));
    for (const r of [a, b]) {
      expect(r.status).toBe("drafted");
      expect(r.skipped_reason).toMatch(/kill switch is on/);
      expect((await s.draft(r.draft_id!)).state).toBe("queued");
    }
    expect(s.telegram.drafts()).toEqual([]);
    expect(killNotices()).toHaveLength(1);

    await killswitch("off");
    await s.waitState(a.draft_id!, "posted", 30_000);
    await s.waitState(b.draft_id!, "posted", 30_000);
    expect(s.telegram.drafts()).toHaveLength(2);
    await waitFor(() => s.ledgerRows().filter((r) => r.outcome === "drafted").length === 2, 10_000, () => "two drafted ledger rows");
    expect(killNotices()).toHaveLength(1);
  });

  it("an approval while it is on creates no Linear issue until it goes off", async () => {
    await s.worker();
    const r = await s.submit(s.completion(ACTION_BODY));
    await s.waitState(r.draft_id!, "posted");
    await killswitch("on");
    const react = await runCli(["drafts", "react", r.draft_id!, "approve"], s.env(), { timeoutMs: 60_000 });
    expect(react.code, react.stderr).toBe(0);
    expect(lastJsonLine(react.stdout)).toMatchObject({ state: "approved", accepted: null, message: expect.stringMatching(/kill switch is on/) });
    expect((await s.draft(r.draft_id!)).state).toBe("approved");
    // Held: a few rechecks pass and still no issue.
    await new Promise((resolve) => setTimeout(resolve, 1500));
    expect(s.linear.issues).toHaveLength(0);
    expect(s.auditTypes(r.interaction_id)).not.toContain("margot_intent_accepted");
    expect(killNotices()).toHaveLength(1);

    await killswitch("off");
    await waitFor(() => s.linear.issues.length === 1, 30_000, () => "the held approval's Linear issue");
    await waitFor(() => s.auditTypes(r.interaction_id).includes("margot_intent_accepted"), 10_000);
    expect((await s.draft(r.draft_id!)).linear_issue_id).not.toBeNull();
  });
});
