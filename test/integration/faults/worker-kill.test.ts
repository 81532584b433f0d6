// Fault: the worker process is SIGKILLed while a run's child (the built-in one, driving the real Sandcastle
// with the script agent) runs. Guarantee: no process of the run survives, the run ends failed / worker_lost
// once a worker notices, it is never re-run, its files (run dir with the config, raw log dirs) are gone, and the
// worker that declares it lost retains its workspace (its log lines were written into RUNS_DIR as it ran).
import { existsSync, readdirSync, readFileSync } from "node:fs";
import { join, resolve } from "node:path";
import { afterEach, beforeEach, describe, expect, it } from "vitest";
import { Queue } from "bullmq";
import { enqueueRun, readRunResult, reapDueAt, SANDBOX_RETENTION_QUEUE } from "../../../queues/index.js";
import { CliProcess, loggedChildPid, stopAllCli, waitFor } from "../../helpers/cli.js";
import { gitOut, makeGitRepo, RunScope, SECRET_VALUE } from "../../helpers/run-scope.js";
import { alive, cleanup, pgrep, trackPid } from "../sandcastle-child/child-harness.js";

const LONG_SLEEP = resolve(import.meta.dirname, "../../fixtures/sandcastle/long-sleep");

let s: RunScope;
beforeEach(() => {
  s = new RunScope();
});
afterEach(async () => {
  await stopAllCli();
  cleanup();
  await s.close();
});

/** Where Sandcastle's raw logs and git config would go under /tmp if they left the run dir: none may appear after a kill. */
const childTempDirs = (runId: string) =>
  readdirSync("/tmp").filter((name) => name.startsWith(`scq-logs-${runId.slice(0, 40)}-`) || name.startsWith(`scq-gitconfig-${runId}-`));

describe("worker SIGKILL mid-run", () => {
  it("child, agent and the agent's child are gone within 5 s; a new worker records worker_lost, never re-runs it; the run's files are gone, its workspace is retained", async () => {
    const repo = join(s.dir.path, "repo");
    makeGitRepo(repo);
    const sleepFor = `48.${String(process.pid).padStart(6, "0")}${Math.floor(Math.random() * 1e6)}`;
    // The built-in child (no SANDCASTLE_BIN): its stdin watchdog is what ends the orphans (ADR 0002).
    // A lock of 10 s: a loaded CI machine must not lose a live worker's lock (a lost lock also ends a run worker_lost).
    // LOG_LEVEL info: the worker logs its run child's pid ("run child started").
    const env = s.env({ SANDCASTLE_BIN: "", SCQ_LOCK_DURATION_MS: "10000", LOG_LEVEL: "info" });
    const first = new CliProcess(["worker"], env);
    await first.waitForOutput(/workers running/);
    const request = s.request({ repo_workdir: repo, prompt_template_dir: LONG_SLEEP, branch: "agent/lost" }, { SLEEP_FOR: sleepFor });
    const { runId } = await enqueueRun(s.queue, request, { envManifestDir: s.manifestDir });

    const job = await s.queue.getJob(runId);
    await waitFor(
      async () => {
        // A run that ended before its agent slept can never pass: say how it ended instead of waiting out the clock.
        const state = await job!.getState();
        if (state === "completed" || state === "failed")
          throw new Error(
            `the run ended ${state} before its agent slept: ${JSON.stringify(await readRunResult(s.redis, s.queue, (await s.queue.getJob(runId))!))}`,
          );
        return pgrep(`sleep ${sleepFor}`).length > 0 && existsSync(join(s.outDir, "agent.pid"));
      },
      60_000,
      () => "the agent's sleep to start",
    );
    const grandchild = pgrep(`sleep ${sleepFor}`)[0]!;
    const agent = Number(readFileSync(join(s.outDir, "agent.pid"), "utf8").trim());
    const child = loggedChildPid(first, runId);
    for (const pid of [grandchild, agent, child]) trackPid(pid);
    expect([child, agent, grandchild].map(alive)).toEqual([true, true, true]);
    // The files the kill must not leave behind exist now, so their absence later means something.
    expect(existsSync(join(s.configDir, `scq-run-${runId}`))).toBe(true);
    expect(existsSync(join(s.configDir, `scq-run-${runId}`, "sandcastle-logs"))).toBe(true);
    expect(childTempDirs(runId)).toEqual([]);
    // The run's lines reach RUNS_DIR as it runs: what the worker declaring it lost finds and keeps.
    const retainedLog = join(s.runsDir, runId, "job", "session.log");
    await waitFor(
      () => existsSync(retainedLog) && readFileSync(retainedLog, "utf8").includes("sleeping "),
      10_000,
      () => "the agent's line in the retained log",
    );

    await first.stop("SIGKILL");
    await waitFor(
      () => ![child, agent, grandchild].some(alive),
      5000,
      () => `the run's processes to go (alive: ${[child, agent, grandchild].filter(alive).join(", ")})`,
    );
    await waitFor(
      () => childTempDirs(runId).length === 0,
      5000,
      () => `the child's temp dirs to go: ${childTempDirs(runId).join(", ")}`,
    );

    const second = new CliProcess(["worker"], env);
    await second.waitForOutput(/workers running/);
    await waitFor(
      async () => (await job!.getState()) === "failed",
      30_000,
      () => "the lost run to be failed",
    );
    await waitFor(
      () => s.auditRows().some((r) => r.type === "sandcastle_run_failed" && r.run_id === runId),
      5000,
      () => "the worker_lost audit row",
    );
    const rows = s.auditRows().filter((r) => r.run_id === runId);
    expect(rows.filter((r) => r.type === "sandcastle_run_failed")).toEqual([expect.objectContaining({ failure_reason: "worker_lost" })]);
    expect(rows.filter((r) => r.type === "sandcastle_run_started")).toHaveLength(1);
    const result = await readRunResult(s.redis, s.queue, (await s.queue.getJob(runId))!);
    expect(result).toMatchObject({ run_id: runId, status: "failed", failure_reason: "worker_lost" });
    await waitFor(
      () => !existsSync(join(s.configDir, `scq-run-${runId}`)),
      5000,
      () => "the run dir to be removed",
    );
    expect(readdirSync(s.configDir)).toEqual([]);
    // Its workspace is retained like any ended run's, by the worker that declared it lost, with its reap job.
    const kept = join(s.runsDir, runId);
    await waitFor(
      () => existsSync(join(kept, "retained.json")),
      30_000,
      () => "the lost run to be retained",
    );
    expect(JSON.parse(readFileSync(join(kept, "retained.json"), "utf8"))).toMatchObject({
      run_id: runId,
      branch: "agent/lost",
      status: "failed",
      provider: "noSandbox",
    });
    expect(JSON.parse(readFileSync(join(kept, "job", "result.json"), "utf8"))).toMatchObject({ status: "failed", failure_reason: "worker_lost" });
    expect(JSON.parse(readFileSync(join(kept, "job", "request.json"), "utf8"))).toMatchObject({ branch: "agent/lost", repo_workdir: repo });
    expect(readdirSync(join(kept, "job", "prompt"))).toEqual(["prompt.md"]);
    expect(readFileSync(retainedLog, "utf8")).toContain("── sandcastle: [run] Started on branch agent/lost\nsleeping ");
    // The copy is the sandbox user's (uid 1000 for a root-owned repository): git as root must be told to trust it.
    expect(gitOut(join(kept, "workspace"), "-c", "safe.directory=*", "rev-parse", "HEAD")).toBe(gitOut(repo, "rev-parse", "agent/lost"));
    expect(existsSync(join(kept, ".keeping"))).toBe(false);
    for (const file of ["retained.json", "job/request.json", "job/result.json", "job/session.log"])
      expect(readFileSync(join(kept, file), "utf8"), file).not.toContain(SECRET_VALUE);
    const retention = new Queue(SANDBOX_RETENTION_QUEUE, { connection: s.redis, prefix: s.prefix });
    try {
      await waitFor(
        async () => (await reapDueAt(s.redis, retention, runId)) !== null,
        10_000,
        () => "the lost run's reap job",
      );
    } finally {
      await retention.close();
    }
    // Still not re-run a while later: no second agent.
    await new Promise((r) => setTimeout(r, 1500));
    expect(pgrep(`sleep ${sleepFor}`)).toEqual([]);
    expect(second.child.exitCode).toBeNull();
  }, 150_000);
});
