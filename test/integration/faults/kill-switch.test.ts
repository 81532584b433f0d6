// Fault: the kill switch is turned on (from another process) while 3 runs are active and more wait.
// Guarantee: the active ones end killed / kill_switch_mid_run within 8 s, the waiting ones are skipped
// (kill_switch_active) without a child, and every job ends with a result: none lost.
import { existsSync, readFileSync } from "node:fs";
import { join } from "node:path";
import { afterEach, beforeEach, describe, expect, it } from "vitest";
import { enqueueRun, readRunResult } from "../../../queues/index.js";
import { CliProcess, runCli, stopAllCli, waitFor } from "../../helpers/cli.js";
import { RunScope } from "../../helpers/run-scope.js";
import { alive } from "../sandcastle-child/child-harness.js";

let s: RunScope;
beforeEach(() => {
  s = new RunScope();
});
afterEach(async () => {
  await stopAllCli();
  await s.close();
});

describe("kill switch under load", () => {
  it("3 active + 5 waiting: the 3 are killed within 8 s, the 5 are skipped, every job has its result", async () => {
    const worker = new CliProcess(["worker"], s.env());
    await worker.waitForOutput(/workers running/);
    const enqueue = async (mode: string) => (await enqueueRun(s.queue, s.request({}, { FAKE_MODE: mode }), { envManifestDir: s.manifestDir })).runId;
    const active = [await enqueue("sleep"), await enqueue("sleep"), await enqueue("sleep")];
    await waitFor(() => active.every((id) => existsSync(join(s.outDir, `grandchild-${id}`))), 30_000, () => "3 runs to be running");
    const waiting: string[] = [];
    for (let i = 0; i < 5; i++) waiting.push(await enqueue("ok"));
    expect(await s.queue.getWaitingCount()).toBe(5);
    const grandchildren = active.map((id) => Number(readFileSync(join(s.outDir, `grandchild-${id}`), "utf8")));

    const on = await runCli(["killswitch", "on"], s.env());
    expect(on.code, on.stderr).toBe(0);
    // From the moment the switch is on (the CLI has said so), not from the CLI's own start-up.
    const t0 = Date.now();
    const states = async (ids: string[]) => Promise.all(ids.map(async (id) => (await s.queue.getJob(id))?.getState()));
    await waitFor(async () => (await states(active)).every((st) => st === "failed"), 8000, () => "the 3 active runs to end");
    const finished = await Promise.all(active.map(async (id) => (await s.queue.getJob(id))!.finishedOn!));
    expect(Math.max(...finished) - t0).toBeLessThan(8000);
    expect(grandchildren.filter(alive)).toEqual([]);

    await waitFor(async () => (await states(waiting)).every((st) => st === "failed"), 20_000, () => "the waiting runs to be skipped");
    const result = async (id: string) => readRunResult(s.redis, s.queue, (await s.queue.getJob(id))!);
    for (const id of active) expect(await result(id)).toMatchObject({ status: "killed", failure_reason: "kill_switch_mid_run" });
    for (const id of waiting) expect(await result(id)).toMatchObject({ status: "skipped", skip_reason: "kill_switch_active" });
    // Only the 3 that were running ever started a child, once each.
    expect([...s.tally().entries()].sort()).toEqual(active.map((id) => [id, 1]).sort());
    expect(worker.child.exitCode).toBeNull();
  }, 90_000);
});
