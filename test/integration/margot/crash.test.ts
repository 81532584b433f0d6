// A worker killed between "draft posted" and "ledger written": the retry must not post a second draft.
// The kill point is made exact without a test hook: the ledger path is a FIFO, so the worker posts
// the draft, records it, and then blocks opening the ledger (no reader) until it is SIGKILLed.
import { execFileSync } from "node:child_process";
import { rmSync } from "node:fs";
import { describe, expect, it } from "vitest";
import { enqueueResearchCompletion } from "../../../queues/margot-intent.js";
import type { MargotIntentResult } from "../../../src/margot/contract.js";
import { waitFor } from "../../helpers/cli.js";
import { ACTION_BODY, type MargotScope, useMargotScope } from "../../helpers/margot-scope.js";

let s: MargotScope;
useMargotScope((scope) => (s = scope));

describe("crash safety", () => {
  it("kill -9 after the draft is posted, before the ledger row: the retry posts no second draft and writes the row once", async () => {
    execFileSync("mkfifo", [s.ledgerPath]);
    const first = await s.worker();
    const c = s.completion(ACTION_BODY);
    const { jobId } = await enqueueResearchCompletion(s.queue, c);

    await waitFor(() => s.telegram.drafts().length === 1, 15_000, () => "the draft to reach Telegram");
    const [draft] = await s.drafts.list();
    await s.waitState(draft!.id, "posted");
    // The worker is now blocked on the ledger FIFO (reading it would unblock it): the draft is out, the job is
    // not done. The drafted audit row goes beside the ledger row, and may be written with its mark already.
    expect(await s.queue.getJobState(jobId)).toBe("active");
    first.child.kill("SIGKILL");
    await first.waitExit();

    rmSync(s.ledgerPath);
    await s.worker();
    const result = (await s.waitJob(jobId, 30_000)) as MargotIntentResult;

    expect(result).toMatchObject({ status: "drafted", draft_id: draft!.id });
    expect(s.telegram.drafts()).toHaveLength(1);
    expect(s.ledgerRows(c.interaction_id).map((r) => r.outcome)).toEqual(["drafted"]);
    await waitFor(() => s.auditTypes(c.interaction_id).length === 2, 5000);
    expect(s.auditTypes(c.interaction_id)).toEqual(["margot_intent_classified", "margot_intent_drafted"]);
    expect((await s.drafts.list()).length).toBe(1);
    // The expiry clock exists exactly once.
    const delayed = await s.queue.getDelayed();
    expect(delayed.filter((j) => j.name === "draft-expire").map((j) => j.id)).toEqual([`expire-${draft!.id}-0`]);
  });

  it("kill -9 while the send is unanswered: the retry re-sends once, marked, and the draft stays one draft", async () => {
    const first = await s.worker();
    s.telegram.holdNext();
    const c = s.completion(ACTION_BODY);
    const { jobId } = await enqueueResearchCompletion(s.queue, c);
    await waitFor(() => s.telegram.drafts().length === 1, 15_000, () => "the draft to reach Telegram");
    const [draft] = await s.drafts.list();
    expect(draft!.state).toBe("posting");
    first.child.kill("SIGKILL");
    await first.waitExit();

    await s.worker();
    const result = (await s.waitJob(jobId, 30_000)) as MargotIntentResult;
    expect(result).toMatchObject({ status: "drafted", draft_id: draft!.id });
    const messages = s.telegram.drafts();
    expect(messages).toHaveLength(2);
    expect(messages[1]!.text.split("\n")[0]).toBe(`📝 Margot draft ${draft!.id} (re-sent: an earlier send may have arrived unconfirmed; react to this message)`);
    const posted = await s.draft(draft!.id);
    expect(posted.state).toBe("posted");
    expect(posted.messages.map((m) => m.message_id)).toEqual([messages[1]!.message_id]);
    await waitFor(() => s.ledgerRows(c.interaction_id).length === 1, 5000);
    expect(s.ledgerRows(c.interaction_id).map((r) => r.outcome)).toEqual(["drafted"]);
    expect((await s.drafts.list()).length).toBe(1);
  });
});
