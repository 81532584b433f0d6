// MARGOT_CONCURRENCY: how many margot-intent jobs one worker process runs at once (ADR 0025). Seen from
// outside: drafts whose Telegram sends are held open are that many jobs in flight, and never one more.
import { describe, expect, it } from "vitest";
import { waitFor } from "../../helpers/cli.js";
import { ACTION_BODY, type MargotScope, useMargotScope } from "../../helpers/margot-scope.js";

describe("margot-intent concurrency", () => {
  let s: MargotScope;
  useMargotScope((scope) => (s = scope));

  it("MARGOT_CONCURRENCY=3: three completions post at once while the rest wait; all seven are drafted once the sends answer", async () => {
    await s.worker(s.env({ MARGOT_CONCURRENCY: "3", MARGOT_RATE_LIMIT_MAX: "100" }));
    s.telegram.closeGate();
    const results = Promise.all(Array.from({ length: 7 }, () => s.submit(s.completion(ACTION_BODY))));
    await waitFor(() => s.telegram.atGate === 3, 15_000, () => `3 sends held (now ${s.telegram.atGate})`);
    // A fourth job would have reached its send by now: its preparation and claim take milliseconds.
    await new Promise((r) => setTimeout(r, 700));
    expect(s.telegram.atGate).toBe(3);
    expect(await s.queue.getActiveCount()).toBe(3);
    expect(await s.queue.getWaitingCount()).toBe(4);
    s.telegram.openGate();
    expect((await results).map((r) => r.status)).toEqual(Array(7).fill("drafted"));
    expect(s.telegram.drafts()).toHaveLength(7);
  });
});
