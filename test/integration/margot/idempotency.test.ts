// The same interaction_id enqueued twice gives one classification and at most one draft, whatever
// the timing: at once, after the first finished, and after its job was removed by retention.
import { describe, expect, it } from "vitest";
import { MargotIntentResult } from "../../../src/margot/contract.js";
import { enqueueResearchCompletion } from "../../../queues/margot-intent.js";
import { lastJsonLine, runCli } from "../../helpers/cli.js";
import { ACTION_BODY, INFORMATIONAL_BODY, type MargotScope, useMargotScope } from "../../helpers/margot-scope.js";

let s: MargotScope;
useMargotScope((scope) => (s = scope));

describe("one interaction, one decision", () => {
  it("enqueued twice at once (two CLI producers) → one job, one classification, one draft", async () => {
    await s.worker();
    const c = s.completion(ACTION_BODY);
    const [a, b] = await Promise.all(
      [0, 1].map(() => runCli(["enqueue", "margot-intent", "--completion", "-", "--wait"], s.env(), { input: JSON.stringify(c) })),
    );
    expect(a!.code, a!.stderr).toBe(0);
    expect(b!.code, b!.stderr).toBe(0);
    const ra = MargotIntentResult.parse(lastJsonLine(a!.stdout));
    const rb = MargotIntentResult.parse(lastJsonLine(b!.stdout));
    // Both reached the one job, or one CLI started after that job had finished (a loaded machine) and was
    // answered as a duplicate of it: either way one decision, one draft.
    const [first, second] = ra.status === "drafted" ? [ra, rb] : [rb, ra];
    expect(first.status).toBe("drafted");
    if (second.status === "drafted") expect(second).toEqual(first);
    else expect(second).toMatchObject({ status: "duplicate", reason: "duplicate_interaction", draft_id: first.draft_id });
    expect(s.auditTypes(c.interaction_id).filter((t) => t === "margot_intent_classified")).toHaveLength(1);
    expect(s.telegram.drafts()).toHaveLength(1);
    expect(await s.drafts.list()).toHaveLength(1);
  });

  it("enqueued again after it finished, or after its job was removed → duplicate with its state now, no new rows, no new draft", async () => {
    await s.worker();
    const c = s.completion(ACTION_BODY);
    const first = await s.submit(c);
    const again = await s.submit(c);
    expect(again).toMatchObject({ status: "duplicate", reason: "duplicate_interaction", draft_id: first.draft_id, current_state: "posted" });

    await (await s.queue.getJob(`intent-${c.interaction_id}`))!.remove();
    const third = await s.submit(c);
    expect(third).toMatchObject({
      interaction_id: c.interaction_id,
      status: "duplicate",
      reason: "duplicate_interaction",
      draft_id: first.draft_id,
      classification: "action_shaped",
    });
    expect(third.skipped_reason).toMatch(/already processed .*drafted, draft d-.*it is now posted/);
    expect(s.auditTypes(c.interaction_id)).toEqual(["margot_intent_classified", "margot_intent_drafted"]);
    expect(s.ledgerRows(c.interaction_id).map((r) => r.outcome)).toEqual(["drafted"]);
    expect(s.telegram.drafts()).toHaveLength(1);
  });

  it("an informational completion enqueued twice writes one ledger row", async () => {
    await s.worker();
    const c = s.completion(INFORMATIONAL_BODY);
    await s.submit(c);
    await (await s.queue.getJob(`intent-${c.interaction_id}`))!.remove();
    expect((await s.submit(c)).status).toBe("duplicate");
    expect(s.ledgerRows(c.interaction_id)).toHaveLength(1);
    expect(s.auditTypes(c.interaction_id)).toEqual(["margot_intent_classified"]);
  });

  it("a duplicate answers with the interaction's state now: accepted after 👍, suppressed after ❌", async () => {
    await s.worker(s.localEnv());
    const accepted = s.completion(ACTION_BODY);
    const a = await s.submit(accepted);
    const react = await runCli(["drafts", "react", a.draft_id!, "approve"], s.localEnv(), { timeoutMs: 60_000 });
    expect(react.code, react.stderr).toBe(0);
    expect(await s.submit(accepted)).toMatchObject({ status: "duplicate", current_state: "accepted" });

    const rejected = s.completion(ACTION_BODY);
    const r = await s.submit(rejected);
    expect((await runCli(["drafts", "react", r.draft_id!, "reject"], s.localEnv(), { timeoutMs: 60_000 })).code).toBe(0);
    // Loop detection answers for a rejected interaction, naming why.
    expect(await s.submit(rejected)).toMatchObject({ status: "suppressed", reason: "recently_rejected" });
  });

  it("a duplicate answers expired after the expiry timer", async () => {
    await s.worker(s.localEnv({ MARGOT_DRAFT_EXPIRY_SECONDS: "2" }));
    const expired = s.completion(ACTION_BODY);
    const e = await s.submit(expired);
    await s.waitState(e.draft_id!, "expired", 20_000);
    const again = await s.submit(expired);
    expect(again).toMatchObject({ status: "duplicate", current_state: "expired" });
    expect(again.skipped_reason).toMatch(/it is now expired by timer/);
  });

  it("a job claimed by the previous version (the draft copied into its intent record, not created yet) resumes and posts that draft", async () => {
    const c = s.completion(ACTION_BODY);
    const { jobId } = await enqueueResearchCompletion(s.queue, c);
    const job = (await s.queue.getJob(jobId))!;
    // What the previous version's claim left when its worker died before creating the draft.
    const draftId = "d-0123456789ab";
    const result = {
      interaction_id: c.interaction_id,
      classification: "action_shaped",
      confidence: 0.9,
      action_summary: "Replace the retry loop",
      target_repo: null,
      draft_id: draftId,
      skipped_reason: null,
      status: "drafted",
      reason: null,
    };
    const draft = {
      id: draftId,
      interaction_id: c.interaction_id,
      title: "Replace the retry loop",
      body: "the reviewed body",
      ticket: {},
      target_repo: null,
      project: null,
      classification: "action_shaped",
      confidence: 0.9,
      channel: "local",
      created_at: new Date().toISOString(),
    };
    await s.redis.hset(
      `${s.prefix}:margot:intent:${c.interaction_id}`,
      "job",
      `${job.id}@${job.timestamp}`,
      "result",
      JSON.stringify(result),
      "draft",
      JSON.stringify(draft),
      "follow_up",
      "",
      "decided_at",
      new Date().toISOString(),
    );
    await s.worker(s.localEnv());
    expect(await s.waitJob(jobId)).toMatchObject({ status: "drafted", draft_id: draftId });
    expect(await s.draft(draftId)).toMatchObject({ state: "posted", title: "Replace the retry loop", body: "the reviewed body" });
    expect(s.auditTypes(c.interaction_id)).toEqual(["margot_intent_classified", "margot_intent_drafted"]);
    expect(s.ledgerRows(c.interaction_id).map((r) => r.outcome)).toEqual(["drafted"]);
  });
});
