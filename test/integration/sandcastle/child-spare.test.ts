// The spare run child (child-spare.ts) of a real worker process with the built-in child: started before any run,
// taken by the next run (the run's child is that very process), started again after it; a spare that died is
// replaced and the run starts a child of its own; the next spare starts while a long run still works; the spare goes
// with its worker, stopped or SIGKILLed.
import { execFileSync } from "node:child_process";
import { resolve, join } from "node:path";
import { writeFileSync } from "node:fs";
import { afterEach, beforeEach, describe, expect, it } from "vitest";
import { SandcastleRunResult } from "../../../src/sandcastle/contract.js";
import { CliProcess, lastJsonLine, runCli, stopAllCli, waitFor } from "../../helpers/cli.js";
import { makeGitRepo, RunScope } from "../../helpers/run-scope.js";

const COMMIT_FILE = resolve(import.meta.dirname, "../../fixtures/sandcastle/commit-file");
const LONG_SLEEP = resolve(import.meta.dirname, "../../fixtures/sandcastle/long-sleep");
let s: RunScope;
let repo: string;

beforeEach(() => {
  s = new RunScope();
  repo = join(s.dir.path, "repo");
  makeGitRepo(repo);
  writeFileSync(join(s.outDir, "release"), "");
});
afterEach(async () => {
  await stopAllCli();
  await s.close();
});

/** The worker's children that wait for a run (`run --config-on-stdin`). */
function psChildren(workerPid: number): number[] {
  let out: string;
  try {
    out = execFileSync("ps", ["-o", "pid=,args=", "--ppid", String(workerPid)], { encoding: "utf8" });
  } catch {
    return []; // ps exits 1 when the worker has no child
  }
  return out
    .split("\n")
    .filter((l) => l.includes("--config-on-stdin"))
    .map((l) => Number(l.trim().split(/\s+/)[0]));
}
const alive = (pid: number) => {
  try {
    process.kill(pid, 0);
    return true;
  } catch {
    return false;
  }
};

async function run(branch: string): Promise<SandcastleRunResult> {
  const request = s.request({
    session_id: `spare-${branch}`,
    agent: "script",
    sandbox: "noSandbox",
    dry_run: true,
    prompt_template_dir: COMMIT_FILE,
    repo_workdir: repo,
    branch: `agent/${branch}`,
  });
  const res = await runCli(["enqueue", "sandcastle-run", "--request", "-", "--wait"], s.env(), { input: JSON.stringify(request), timeoutMs: 120_000 });
  expect(res.code, res.stderr).toBe(0);
  return SandcastleRunResult.parse(lastJsonLine(res.stdout));
}

/** The pids the worker logged as its runs' children. */
const childPids = (w: CliProcess) => [...`${w.stdout}${w.stderr}`.matchAll(/"child_pid":(\d+)/g)].map((m) => Number(m[1]));

describe("the spare run child", () => {
  it("is started before any run, becomes the next run's child, and is started again after it; one that died is replaced", async () => {
    const w = new CliProcess(["worker"], s.env({ SANDCASTLE_BIN: "", LOG_LEVEL: "info" }));
    await w.waitForOutput(/workers running/);
    await waitFor(() => psChildren(w.pid).length === 1, 20_000, () => "a spare of the worker");
    const [first] = psChildren(w.pid);

    expect((await run("one")).status).toBe("ok");
    expect(childPids(w)).toEqual([first]);
    expect(alive(first!)).toBe(false);
    await waitFor(() => psChildren(w.pid).length === 1, 20_000, () => "a new spare after the run");
    const [second] = psChildren(w.pid);
    expect(second).not.toBe(first);

    // A spare killed from outside: the next run starts a child of its own, and a spare is there again after it.
    process.kill(second!, "SIGKILL");
    await waitFor(() => psChildren(w.pid).length === 0, 10_000, () => "the killed spare gone");
    expect((await run("two")).status).toBe("ok");
    expect(childPids(w)).toHaveLength(2);
    expect(childPids(w)[1]).not.toBe(second);
    await waitFor(() => psChildren(w.pid).length === 1, 20_000, () => "a spare again");
  }, 180_000);

  it("the next spare starts while a long run's agent still works, not only at its result", async () => {
    const w = new CliProcess(["worker"], s.env({ SANDCASTLE_BIN: "", LOG_LEVEL: "info" }));
    await w.waitForOutput(/workers running/);
    await waitFor(() => psChildren(w.pid).length === 1, 20_000, () => "a spare of the worker");
    const [first] = psChildren(w.pid);
    const request = s.request(
      {
        session_id: "spare-long",
        agent: "script",
        sandbox: "noSandbox",
        dry_run: true,
        prompt_template_dir: LONG_SLEEP,
        repo_workdir: repo,
        branch: "agent/long",
      },
      { SLEEP_FOR: "20", OUT_DIR: s.outDir },
    );
    const queued = await runCli(["enqueue", "sandcastle-run", "--request", "-"], s.env(), { input: JSON.stringify(request) });
    expect(queued.code, queued.stderr).toBe(0);
    await waitFor(() => childPids(w).length === 1, 20_000, () => "the run's child");
    expect(childPids(w)).toEqual([first]);
    // Seconds into the agent's 20 s: a new spare, while the run is still active.
    await waitFor(() => psChildren(w.pid).some((pid) => pid !== first), 15_000, () => "a spare while the run works");
    expect(alive(first!)).toBe(true);
    const runId = (JSON.parse(queued.stdout.trim().split("\n")[0]!) as { job_id: string }).job_id;
    expect((await runCli(["cancel", runId], s.env())).code).toBe(0);
  }, 120_000);

  it("goes with its worker: stopped with it, and by itself when the worker is SIGKILLed", async () => {
    const stopped = new CliProcess(["worker"], s.env({ SANDCASTLE_BIN: "" }));
    await stopped.waitForOutput(/workers running/);
    await waitFor(() => psChildren(stopped.pid).length === 1, 20_000, () => "a spare of the worker");
    const [spareOfStopped] = psChildren(stopped.pid);
    expect(await stopped.stop("SIGTERM")).toBe(0);
    expect(alive(spareOfStopped!)).toBe(false);

    const killed = new CliProcess(["worker"], s.env({ SANDCASTLE_BIN: "" }));
    await killed.waitForOutput(/workers running/);
    await waitFor(() => psChildren(killed.pid).length === 1, 20_000, () => "a spare of the worker");
    const [spareOfKilled] = psChildren(killed.pid);
    await killed.stop("SIGKILL");
    // Its stdin closed with the worker: it exits by itself (its own process group: the kill did not reach it).
    await waitFor(() => !alive(spareOfKilled!), 10_000, () => `spare ${spareOfKilled} still alive after its worker was SIGKILLed`);
  }, 120_000);
});
