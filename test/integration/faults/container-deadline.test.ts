// Fault: the worker and the run's child both go while the run's agent works in its podman container (the OOM killer,
// `kill -9` of the process groups; or a child frozen by SIGSTOP), and no worker of the deployment ever starts again.
// Guarantee: the container does not outlive its run. A child killed closes its exec channel (ADR 0049): the
// container's main process, its exec server, kills what it ran for the child and ends, and the container (--rm) goes
// with its mounts — the agent's repository, the host's objects, the secret file — at once. A child that is there but
// silent (frozen) leaves the channel open: the main process still ends at the run's deadline plus the kill grace, and
// not before.
import { existsSync, readFileSync, writeFileSync } from "node:fs";
import { join, resolve } from "node:path";
import { afterEach, beforeEach, describe, expect, it } from "vitest";
import { ChildConfig, KILL_GRACE_MS } from "../../../src/sandcastle/contract.js";
import { loggedChildPid, runCli, waitFor } from "../../helpers/cli.js";
import { ContainerRuns } from "../../helpers/container-runs.js";
import { inspect, runContainerIds, skipContainers } from "../../helpers/containers.js";
import { alive } from "../sandcastle-child/child-harness.js";

const HELD = resolve(import.meta.dirname, "../../fixtures/sandcastle/container-commit");
/** How long podman may take, on a loaded 2-core machine, from a container's main process ending to its removal. */
const REMOVAL_SLACK_MS = 15_000;

let c: ContainerRuns;
beforeEach(() => {
  c = new ContainerRuns();
  c.handRepoToAgentUser();
});
afterEach(() => c.close());

/** A held run whose agent is working in its container; the worker's process and the child's pid, and when the run ends. */
async function heldRun(
  timeoutMinutes: number,
): Promise<{ runId: string; worker: Awaited<ReturnType<ContainerRuns["startWorker"]>>; child: number; endsBy: number }> {
  const worker = await c.startWorker({ LOG_LEVEL: "info" }); // it logs its run child's pid
  const queued = await runCli(["enqueue", "sandcastle-run", "--request", "-"], c.env(), {
    input: JSON.stringify(c.request(HELD, { timeout_minutes: timeoutMinutes }, { HOLD: "1" })),
  });
  expect(queued.code, queued.stderr).toBe(0);
  const runId = (JSON.parse(queued.stdout.trim().split("\n")[0]!) as { job_id: string }).job_id;
  await waitFor(
    () => c.heldAgentRepo() !== undefined,
    120_000,
    () => "the agent to start in its container",
  );
  // The run's end as the worker wrote it for the child: its deadline plus the grace.
  const config = ChildConfig.parse(JSON.parse(readFileSync(join(c.runDir(runId), "config.json"), "utf8")));
  const endsBy = Date.parse(config.ends_by!);
  expect(endsBy - Date.now()).toBeLessThanOrEqual(timeoutMinutes * 60_000 + KILL_GRACE_MS);
  expect(runContainerIds(runId)).toHaveLength(1);
  expect(inspect(runId).HostConfig.AutoRemove).toBe(true);
  const child = loggedChildPid(worker, runId);
  return { runId, worker, child, endsBy };
}

describe.skipIf(skipContainers)("worker and child gone mid-run, no worker ever again", { timeout: 240_000 }, () => {
  it("both SIGKILLed: the run container ends with its child's exec channel, at once, the agent with it", async () => {
    const { runId, worker, child, endsBy } = await heldRun(0.75);
    const agentRepo = c.heldAgentRepo()!;
    // Both at once, nothing of ours left to clean up: the child's whole process group and the worker.
    process.kill(-child, "SIGKILL");
    process.kill(worker.pid, "SIGKILL");
    await worker.waitExit();
    await waitFor(() => !alive(child), 5000, () => "the child to be gone");
    const killedAt = Date.now();
    await waitFor(() => runContainerIds(runId).length === 0, REMOVAL_SLACK_MS, () => "the container to end with its child's channel");
    expect(Date.now()).toBeLessThan(endsBy - 10_000);
    expect(Date.now() - killedAt).toBeLessThan(REMOVAL_SLACK_MS);
    // The agent went with it: released now, nothing of it is left to go on and commit.
    writeFileSync(join(agentRepo, ".scq-release"), "");
    await new Promise((r) => setTimeout(r, 1500));
    expect(existsSync(join(agentRepo, "in-container.txt"))).toBe(false);
    // No worker of this deployment came back: nobody but the container itself ended it.
    expect(await (await c.s.queue.getJob(runId))!.getState()).toBe("active");
  });

  it("the child frozen (SIGSTOP), the worker SIGKILLed: the run container ends by itself at the run's deadline plus the grace, and not before", async () => {
    const { runId, worker, child, endsBy } = await heldRun(0.75);
    process.kill(-child, "SIGSTOP");
    process.kill(worker.pid, "SIGKILL");
    await worker.waitExit();
    try {
      // Still there a moment before its time: its channel is open but silent, and only the deadline ends it.
      await new Promise((r) => setTimeout(r, Math.max(0, endsBy - 3000 - Date.now())));
      expect(runContainerIds(runId), "the container ended before the run's deadline plus the grace").toHaveLength(1);
      await waitFor(
        () => runContainerIds(runId).length === 0,
        endsBy + REMOVAL_SLACK_MS - Date.now(),
        () => `the container to end by itself (due at ${new Date(endsBy).toISOString()})`,
      );
      expect(await (await c.s.queue.getJob(runId))!.getState()).toBe("active");
    } finally {
      process.kill(-child, "SIGKILL");
    }
  });
});
