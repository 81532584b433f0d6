// Fault: the worker is asked to stop (SIGTERM) with 3 runs active and 100 waiting.
// Guarantee: the active ones finish within the grace, the waiting ones stay queued, and after a restart
// every one of the 103 runs has run exactly once.
import { resolve } from "node:path";
import { afterEach, beforeEach, describe, expect, it } from "vitest";
import { enqueueRun } from "../../../queues/index.js";
import { CliProcess, stopAllCli, waitFor } from "../../helpers/cli.js";
import { RunScope } from "../../helpers/run-scope.js";

const TALLY_CHILD = resolve(import.meta.dirname, "../../fixtures/children/tally-child.sh");

let s: RunScope;
beforeEach(() => {
  s = new RunScope();
});
afterEach(async () => {
  await stopAllCli();
  await s.close();
});

describe("graceful shutdown under load", () => {
  it("SIGTERM with 3 active + 100 waiting: the 3 finish, the 100 wait; after a restart each of the 103 ran exactly once", async () => {
    const first = new CliProcess(["worker"], s.env({ SCQ_SHUTDOWN_GRACE_SECONDS: "30" }));
    await first.waitForOutput(/workers running/);
    const enqueue = async (extraEnv: Record<string, string>) => (await enqueueRun(s.queue, s.request({}, extraEnv), { envManifestDir: s.manifestDir })).runId;
    const active: string[] = [];
    for (let i = 0; i < 3; i++) active.push(await enqueue({ FAKE_MODE: "hold", HOLD_MS: "10000" }));
    await waitFor(() => active.every((id) => s.tally().has(id)), 30_000, () => "3 runs to be running");
    const waiting: string[] = [];
    for (let i = 0; i < 100; i++) waiting.push(await enqueue({}));
    // Still 3 active (each holds 10 s) and 100 waiting when the signal comes.
    expect(await s.queue.getJobCounts("active", "waiting")).toEqual({ active: 3, waiting: 100 });

    expect(await first.stop("SIGTERM", 30_000)).toBe(0);
    expect(await s.queue.getJobCounts("completed", "waiting", "active", "failed")).toEqual({ completed: 3, waiting: 100, active: 0, failed: 0 });
    expect(s.tally().size).toBe(3);

    // The restarted worker runs the cheapest child: what matters here is the queue, not the child.
    const second = new CliProcess(["worker"], s.env({ SANDCASTLE_BIN: TALLY_CHILD }));
    await second.waitForOutput(/workers running/);
    await waitFor(async () => (await s.queue.getCompletedCount()) === 103, 90_000, () => "all 103 runs to complete");
    expect(await s.queue.getJobCounts("waiting", "active", "failed", "delayed")).toEqual({ waiting: 0, active: 0, failed: 0, delayed: 0 });
    const tally = s.tally();
    expect([...active, ...waiting].filter((id) => tally.get(id) !== 1)).toEqual([]);
    expect(tally.size).toBe(103);
    const ok = s.auditRows().filter((r) => r.type === "sandcastle_run_ok").map((r) => String(r.run_id));
    expect(ok.sort()).toEqual([...active, ...waiting].sort());
  }, 180_000);
});
