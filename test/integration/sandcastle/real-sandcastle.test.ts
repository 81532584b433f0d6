// The whole pipeline on the real @ai-hero/sandcastle with the script agent, in real temp git repos.
import { readdirSync, writeFileSync } from "node:fs";
import { join, resolve } from "node:path";
import { QueueEvents } from "bullmq";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { runPhase } from "../../../queues/index.js";
import { RUN_PHASES, RunProgress, SandcastleRunResult } from "../../../src/sandcastle/contract.js";
import { CliProcess, lastJsonLine, runCli, stopAllCli } from "../../helpers/cli.js";
import { gitOut, makeGitRepo, RunScope } from "../../helpers/run-scope.js";

const COMMIT_FILE = resolve(import.meta.dirname, "../../fixtures/sandcastle/commit-file");
let s: RunScope;
let repo: string;

// One worker and one repo for the file: a worker start costs seconds on a loaded machine, and the runs
// use branches of their own.
beforeAll(async () => {
  s = new RunScope();
  repo = join(s.dir.path, "repo");
  makeGitRepo(repo);
  // The commit-file agent waits for this file (up to 30 s) when OUT_DIR is set, as s.request() sets it.
  writeFileSync(join(s.outDir, "release"), "");
  // The built-in child: SANDCASTLE_BIN empty means "unset".
  const w = new CliProcess(["worker"], s.env({ SANDCASTLE_BIN: "" }));
  await w.waitForOutput(/workers running/);
}, 60_000);
afterAll(async () => {
  await stopAllCli();
  await s.close();
});

async function runWait(request: object): Promise<SandcastleRunResult> {
  const res = await runCli(["enqueue", "sandcastle-run", "--request", "-", "--wait"], s.env(), { input: JSON.stringify(request), timeoutMs: 120_000 });
  expect(res.code, res.stderr).toBe(0);
  return SandcastleRunResult.parse(lastJsonLine(res.stdout));
}

describe("dry run on the real Sandcastle library", () => {
  it("the dry-run check: ok, a branch, ≥1 commit in git, zero env-var names in the session log, ≥3 audit rows", async () => {
    const request = s.request({
      session_id: "verify-2",
      agent: "script",
      sandbox: "noSandbox",
      dry_run: true,
      prompt_template_dir: COMMIT_FILE,
      repo_workdir: repo,
      branch: "agent/verify-2",
    });
    const result = await runWait(request);
    expect(result.status).toBe("ok");
    expect(result.branch).toBe("agent/verify-2");
    expect(result.commits.length).toBeGreaterThanOrEqual(1);
    // In git itself: the branch exists, holds the commit, and the commit added the agent's file.
    expect(gitOut(repo, "rev-parse", "--verify", "agent/verify-2")).toBe(result.commits.at(-1)!.sha);
    expect(gitOut(repo, "merge-base", "--is-ancestor", result.commits[0]!.sha, "agent/verify-2")).toBe("");
    expect(gitOut(repo, "show", "--name-only", "--format=", "agent/verify-2")).toBe("hello-verify-2.txt");
    expect(gitOut(repo, "rev-parse", "--abbrev-ref", "HEAD")).toBe("main");

    const logs = await runCli(["logs", "verify-2"], s.env());
    expect(logs.stdout).toContain("committed hello-verify-2.txt");
    expect(logs.stdout.match(/[A-Z_]+_(KEY|TOKEN|SECRET|PASSWORD)\s*[=:]/g) ?? []).toEqual([]);
    expect(result.audit_row_count).toBeGreaterThanOrEqual(3);
    expect(s.auditRows().map((r) => r.type)).toEqual(["sandcastle_env_resolved", "sandcastle_run_started", "sandcastle_run_ok"]);
    expect(readdirSync(s.configDir)).toEqual([]);
  });

  it("three runs at once on the same repo_workdir with different branches all succeed (Sandcastle #642)", async () => {
    const results = await Promise.all(
      [1, 2, 3].map((i) => runWait(s.request({ session_id: `par-${i}`, prompt_template_dir: COMMIT_FILE, repo_workdir: repo, branch: `agent/par-${i}` }))),
    );
    expect(results.map((r) => r.status)).toEqual(["ok", "ok", "ok"]);
    for (const i of [1, 2, 3]) {
      expect(gitOut(repo, "show", "--name-only", "--format=", `agent/par-${i}`)).toBe(`hello-par-${i}.txt`);
    }
  });

  it("a run reports its phases as job progress, in order: queued → preflight → running → collecting → done", async () => {
    // Every progress update, as BullMQ's event stream carries it: a poll would miss a phase that lasts milliseconds.
    const connection = s.backend.client();
    const events = new QueueEvents("sandcastle-run", { connection, prefix: s.prefix });
    await events.waitUntilReady();
    const seen: RunProgress[] = [];
    let runId = "";
    events.on("progress", ({ jobId, data }) => {
      if (jobId === runId) seen.push(RunProgress.parse(data));
    });
    // Paused, the queue keeps the run waiting for a worker: it stands queued, with no progress of its own yet.
    await s.queue.pause();
    try {
      const request = s.request({ prompt_template_dir: COMMIT_FILE, repo_workdir: repo, branch: "agent/phases" });
      const res = await runCli(["enqueue", "sandcastle-run", "--request", "-"], s.env(), { input: JSON.stringify(request) });
      expect(res.code, res.stderr).toBe(0);
      runId = (JSON.parse(res.stdout) as { job_id: string }).job_id;
      const waiting = (await s.queue.getJob(runId))!;
      expect(await waiting.getState()).toBe("waiting");
      expect(runPhase(waiting.progress)).toBe("queued");
      await s.queue.resume();
      expect((await waiting.waitUntilFinished(events, 120_000)) as SandcastleRunResult).toMatchObject({ status: "ok" });
      expect(["queued", ...seen.map((p) => p.phase)]).toEqual([...RUN_PHASES]);
      const times = seen.map((p) => Date.parse(p.at));
      expect(times).toEqual([...times].sort((a, b) => a - b));
      expect((await s.queue.getJob(runId))!.progress).toEqual(seen.at(-1));
    } finally {
      await s.queue.resume();
      await events.close();
      connection.disconnect();
    }
  });
});
