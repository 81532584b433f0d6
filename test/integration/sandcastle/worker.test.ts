// The sandcastle-run queue through real worker processes and the CLI.
import { existsSync, readdirSync, readFileSync, writeFileSync } from "node:fs";
import { join, resolve } from "node:path";
import { afterEach, beforeEach, describe, expect, it } from "vitest";
import { SandcastleRunResult } from "../../../src/sandcastle/contract.js";
import { CLI, CliProcess, lastJsonLine, runCli, stopAllCli, waitFor, type CliResult } from "../../helpers/cli.js";
import { execFileSync, spawn } from "node:child_process";
import { makeGitRepo, RunScope, SECRET_VALUE } from "../../helpers/run-scope.js";

const LONG_SLEEP = resolve(import.meta.dirname, "../../fixtures/sandcastle/long-sleep");

function pgrep(pattern: string): number[] {
  try {
    return execFileSync("pgrep", ["-f", pattern], { encoding: "utf8" }).trim().split("\n").filter(Boolean).map(Number);
  } catch {
    return [];
  }
}

let s: RunScope;
beforeEach(() => {
  s = new RunScope();
});
afterEach(async () => {
  await stopAllCli();
  await s.close();
});

async function startWorker(extra: Record<string, string> = {}): Promise<CliProcess> {
  const w = new CliProcess(["worker"], s.env(extra));
  await w.waitForOutput(/workers running/);
  return w;
}

async function enqueue(
  request: object,
  wait = true,
): Promise<{ jobLine: { job_id?: string }; result: SandcastleRunResult | null; code: number | null; stderr: string }> {
  const res = await runCli(["enqueue", "sandcastle-run", "--request", "-", ...(wait ? ["--wait"] : [])], s.env(), {
    input: JSON.stringify(request),
    timeoutMs: 60_000,
  });
  const lines = res.stdout.trim().split("\n");
  const first = JSON.parse(lines[0] ?? "{}") as { job_id?: string };
  const last = lines.length > 1 || !("job_id" in first) ? SandcastleRunResult.safeParse(lastJsonLine(res.stdout)) : null;
  return { jobLine: first, result: last?.success ? last.data : null, code: res.code, stderr: res.stderr };
}

describe("sandcastle-run worker", () => {
  it("enqueue --wait prints the SandcastleRunResult as the last line", async () => {
    await startWorker();
    const out = await enqueue(s.request({}, { FAKE_MODE: "ok" }));
    expect(out.code, out.stderr).toBe(0);
    expect(out.result).toMatchObject({ status: "ok", run_id: out.jobLine.job_id, audit_row_count: 3 });
    expect(s.auditRows().map((r) => r.type)).toEqual(["sandcastle_env_resolved", "sandcastle_run_started", "sandcastle_run_ok"]);
  });

  it("TAO_SANDCASTLE_ENABLED=0 → skipped / sandcastle_disabled and no subprocess", async () => {
    await startWorker({ TAO_SANDCASTLE_ENABLED: "0" });
    const out = await enqueue(s.request({}, { FAKE_MODE: "ok" }));
    expect(out.result).toMatchObject({ status: "skipped", skip_reason: "sandcastle_disabled" });
    expect(readdirSync(s.outDir)).toEqual([]);
  });

  it("a job with an invalid payload or a name it does not know fails alone, saying why; the worker keeps serving", async () => {
    await startWorker();
    const bad = await s.queue.add("run", { ...s.request(), repo_workdir: "relative/path" }, { jobId: "run-bad-1" });
    const unknown = await s.queue.add("rerun", s.request({}, { FAKE_MODE: "ok" }), { jobId: "run-bad-2" });
    await waitFor(async () => (await bad.getState()) === "failed" && (await unknown.getState()) === "failed", 10_000);
    expect((await s.queue.getJob("run-bad-1"))?.failedReason).toMatch(/repo_workdir: repo_workdir must be an absolute path/);
    expect((await s.queue.getJob("run-bad-2"))?.failedReason).toBe('unknown sandcastle-run job name "rerun": this worker runs "run" jobs only');
    expect(readdirSync(s.outDir)).toEqual([]);
    const out = await enqueue(s.request({}, { FAKE_MODE: "ok" }));
    expect(out.result?.status).toBe("ok");
  });

  it("no job data, return value, job log or session log holds the secret", async () => {
    await startWorker();
    const req = s.request({}, { FAKE_MODE: "secret" });
    const out = await enqueue(req);
    expect(out.result?.status).toBe("ok");
    const id = out.jobLine.job_id!;
    const logs = await runCli(["logs", String(req.session_id)], s.env());
    expect(logs.stdout.split("\n").length).toBeGreaterThan(3);
    const job = await s.queue.getJob(id);
    const jobLogs = await s.queue.getJobLogs(id);
    const stored = [JSON.stringify(job?.data), JSON.stringify(job?.returnvalue), jobLogs.logs.join("\n"), logs.stdout, readFileSync(s.auditPath, "utf8")].join(
      "\n",
    );
    expect(stored).not.toContain(SECRET_VALUE);
    expect(stored).not.toMatch(/[A-Z_]+_(KEY|TOKEN|SECRET|PASSWORD)\s*[=:]/);
    // And nothing anywhere in this test's Redis keys.
    const keys = await s.redis.keys(`${s.prefix}*`);
    for (const key of keys) {
      const type = await s.redis.type(key);
      const dump =
        type === "string"
          ? await s.redis.get(key)
          : type === "hash"
            ? JSON.stringify(await s.redis.hgetall(key))
            : type === "list"
              ? JSON.stringify(await s.redis.lrange(key, 0, -1))
              : type === "stream"
                ? JSON.stringify(await s.redis.xrange(key, "-", "+"))
                : "";
      expect(dump ?? "", key).not.toContain(SECRET_VALUE);
    }
  });

  it("four simultaneous on_capacity=skip requests: three launch, the fourth is skipped / concurrency_cap", async () => {
    await startWorker();
    const outs = await Promise.all([0, 1, 2, 3].map(() => enqueue(s.request({ on_capacity: "skip" }, { FAKE_MODE: "hold", HOLD_MS: "2000" }))));
    const statuses = outs.map((o) => o.result?.status).sort();
    expect(statuses).toEqual(["ok", "ok", "ok", "skipped"]);
    expect(outs.find((o) => o.result?.status === "skipped")?.result?.skip_reason).toBe("concurrency_cap");
    expect(readdirSync(s.outDir).filter((f) => f.startsWith("started-"))).toHaveLength(3);
  });

  it("two worker processes with 5 jobs never run more than 3 children at once (measured)", async () => {
    await startWorker();
    await startWorker();
    const outs = await Promise.all([0, 1, 2, 3, 4].map(() => enqueue(s.request({}, { FAKE_MODE: "hold", HOLD_MS: "1500" }))));
    expect(outs.map((o) => o.result?.status)).toEqual(["ok", "ok", "ok", "ok", "ok"]);
    const spans = outs.map((o) => {
      const id = o.jobLine.job_id!;
      return { start: JSON.parse(readFileSync(s.started(id), "utf8")).t as number, end: Number(readFileSync(join(s.outDir, `ended-${id}`), "utf8")) };
    });
    const maxOverlap = Math.max(...spans.map((a) => spans.filter((b) => b.start <= a.start && a.start < b.end).length));
    expect(maxOverlap).toBeLessThanOrEqual(3);
    expect(maxOverlap).toBeGreaterThanOrEqual(2);
  });

  it("the kill switch flipped from another process stops a running child at once: killed / kill_switch_mid_run", async () => {
    await startWorker();
    const pending = enqueue(s.request({}, { FAKE_MODE: "sleep" }));
    await waitFor(() => readdirSync(s.outDir).some((f) => f.startsWith("started-")), 15_000);
    const flip = await runCli(["killswitch", "on"], s.env());
    expect(flip.code).toBe(0);
    const out = await pending;
    expect(out.result).toMatchObject({ status: "killed", failure_reason: "kill_switch_mid_run" });
    expect(s.auditRows().at(-1)).toMatchObject({ type: "sandcastle_run_failed", failure_reason: "kill_switch_mid_run" });
    const next = await enqueue(s.request({}, { FAKE_MODE: "ok" }));
    expect(next.result).toMatchObject({ status: "skipped", skip_reason: "kill_switch_active" });
  });

  it("Pi-CEO's kill switch file appearing mid-run stops the child too: killed / kill_switch_mid_run", async () => {
    const killFile = join(s.dir.path, "KILL_SWITCH");
    await startWorker({ KILL_SWITCH_FILE: killFile });
    const pending = enqueue(s.request({}, { FAKE_MODE: "sleep" }));
    await waitFor(() => readdirSync(s.outDir).some((f) => f.startsWith("started-")), 15_000);
    writeFileSync(killFile, "");
    const out = await pending;
    expect(out.result).toMatchObject({ status: "killed", failure_reason: "kill_switch_mid_run" });
  });

  it("cancel RUN_ID from another process: a running run ends killed / cancelled, audited with who asked", async () => {
    await startWorker();
    const pending = enqueue(s.request({}, { FAKE_MODE: "sleep" }));
    await waitFor(() => readdirSync(s.outDir).some((f) => f.startsWith("started-")), 15_000);
    const runId = readdirSync(s.outDir).find((f) => f.startsWith("started-"))!.slice("started-".length);
    const cancel = await runCli(["cancel", runId], s.env());
    expect(cancel.code, cancel.stderr).toBe(0);
    expect(lastJsonLine(cancel.stdout)).toMatchObject({ outcome: "stopped", state: "failed", result: { status: "killed", failure_reason: "cancelled" } });
    const out = await pending;
    expect(out.result, `${out.stderr}`).toMatchObject({ status: "killed", failure_reason: "cancelled" });
    expect(s.auditRows().at(-1)).toMatchObject({ failure_reason: "cancelled", requested_by: expect.stringMatching(/^cli:/) });
  });

  it("enqueue --wait with no worker says so; --wait-timeout says the job still waits and how to follow or cancel it, exit 2", async () => {
    const req = s.request({}, { FAKE_MODE: "ok" });
    const res = await runCli(["enqueue", "sandcastle-run", "--request", "-", "--wait", "--wait-timeout", "1.5"], s.env(), { input: JSON.stringify(req) });
    expect(res.code).toBe(2);
    const runId = (JSON.parse(res.stdout.trim().split("\n")[0]!) as { job_id: string }).job_id;
    expect(res.stdout.trim().split("\n")).toHaveLength(1);
    expect(res.stderr).toMatch(/^sandcastle-queue: no worker is connected to sandcastle-run/m);
    expect(res.stderr).toContain(`job ${runId} is still waiting`);
    expect(res.stderr).toContain(`sandcastle-queue logs ${String(req.session_id)}`);
    expect(res.stderr).toContain(`sandcastle-queue cancel ${runId}`);
    expect(await s.queue.getJob(runId).then((j) => j?.getState())).toBe("waiting");
  });

  it("--wait-timeout while the run is active says it is still active and how to follow or cancel it, exit 2; both ways work", async () => {
    await startWorker();
    const req = s.request({}, { FAKE_MODE: "sleep" });
    const res = await runCli(["enqueue", "sandcastle-run", "--request", "-", "--wait", "--wait-timeout", "3"], s.env(), { input: JSON.stringify(req) });
    expect(res.code, res.stderr).toBe(2);
    const runId = (JSON.parse(res.stdout.trim().split("\n")[0]!) as { job_id: string }).job_id;
    let cancel: CliResult;
    try {
      expect(res.stdout.trim().split("\n")).toHaveLength(1);
      expect(res.stderr.trim().split("\n")).toEqual([
        expect.stringMatching(new RegExp(`^sandcastle-queue: gave up waiting after 3 s: job ${runId} is still active and will finish; `)),
      ]);
      expect(res.stderr).toContain(`follow it with \`sandcastle-queue logs ${String(req.session_id)}\``);
      expect(res.stderr).toContain(`stop it with \`sandcastle-queue cancel ${runId}\``);
      expect(await s.queue.getJob(runId).then((j) => j?.getState())).toBe("active");
      const logs = await runCli(["logs", String(req.session_id)], s.env());
      expect(logs.stdout).toContain("sleeping");
    } finally {
      // The fake child outlives a SIGKILLed worker: the run is stopped whatever the assertions said.
      cancel = await runCli(["cancel", runId], s.env());
    }
    expect(lastJsonLine(cancel.stdout)).toMatchObject({ outcome: "stopped", state: "failed", result: { status: "killed", failure_reason: "cancelled" } });
  });

  it("enqueue --wait on a terminal shows the phases and the log lines on stderr; stdout stays the job line and the result", async () => {
    await startWorker();
    const reqFile = join(s.dir.path, "req.json");
    const outFile = join(s.dir.path, "out.jsonl");
    writeFileSync(reqFile, JSON.stringify(s.request({}, { FAKE_MODE: "sleep" })));
    // `script` gives the CLI a terminal; stdout goes to a file, so only stderr reaches the terminal.
    const cmd = `${process.execPath} ${CLI} enqueue sandcastle-run --request ${reqFile} --wait > ${outFile}`;
    const term = spawn("script", ["-q", "-e", "-c", cmd, "/dev/null"], { env: s.env(), stdio: ["pipe", "pipe", "pipe"] });
    let screen = "";
    term.stdout.on("data", (d: Buffer) => (screen += d.toString()));
    const exited = new Promise<number | null>((r) => term.once("exit", (code) => r(code)));
    try {
      await waitFor(() => /\] running/.test(screen) && screen.includes("sleeping"), 30_000, () => `progress on the terminal (got ${JSON.stringify(screen)})`);
      const runId = JSON.parse(readFileSync(outFile, "utf8").split("\n")[0]!).job_id as string;
      expect(screen).toContain(`[${runId}] running`);
      await runCli(["cancel", runId], s.env());
      expect(await exited).toBe(0);
      const out = readFileSync(outFile, "utf8").trim().split("\n");
      expect(out).toHaveLength(2);
      expect(JSON.parse(out[1]!)).toMatchObject({ run_id: runId, status: "killed", failure_reason: "cancelled" });
    } finally {
      term.kill("SIGKILL");
    }
  });

  it("a failed run is a failed job whose result --wait still prints (exit 0)", async () => {
    await startWorker();
    const out = await enqueue(s.request({}, { FAKE_MODE: "fail" }));
    expect(out.code, out.stderr).toBe(0);
    expect(out.result).toMatchObject({ status: "failed", failure_reason: "agent_unavailable" });
    const job = await s.queue.getJob(out.jobLine.job_id!);
    expect(await job?.getState()).toBe("failed");
    expect(job?.attemptsMade).toBe(1);
    expect(job?.failedReason).toBe("failed: agent_unavailable — claude is not on PATH");
  });

  it("cancel RUN_ID for a run still waiting removes it before it starts", async () => {
    const out = await enqueue(s.request({}, { FAKE_MODE: "ok" }), false);
    const runId = out.jobLine.job_id!;
    const cancel = await runCli(["cancel", runId], s.env());
    expect(lastJsonLine(cancel.stdout)).toMatchObject({ outcome: "removed", state: "waiting" });
    expect(await s.queue.getJob(runId)).toBeUndefined();
    await startWorker();
    await new Promise((r) => setTimeout(r, 500));
    expect(existsSync(s.started(runId))).toBe(false);
  });

  it("SIGKILL of the worker: the real child and its agent are gone within 5 s; the run ends failed / worker_lost, not re-run", async () => {
    const repo = join(s.dir.path, "repo");
    makeGitRepo(repo);
    const sleepFor = String(600 + Math.floor(Math.random() * 300));
    // The built-in child (no SANDCASTLE_BIN) with the script agent: its stdin watchdog is what ends the orphans.
    const w = await startWorker({ SANDCASTLE_BIN: "" });
    const request = s.request({ repo_workdir: repo, prompt_template_dir: LONG_SLEEP, branch: "agent/lost" }, { SLEEP_FOR: sleepFor });
    const queued = await enqueue(request, false);
    const runId = queued.jobLine.job_id!;
    await waitFor(() => pgrep(`sleep ${sleepFor}`).length > 0, 30_000, () => "the agent to start");
    await w.stop("SIGKILL");
    const t0 = Date.now();
    await waitFor(() => pgrep(`sleep ${sleepFor}`).length === 0 && pgrep(runId).length === 0, 5000, () => "the orphaned child and agent to go");
    expect(Date.now() - t0).toBeLessThan(5000);
    await startWorker();
    await waitFor(async () => (await s.queue.getJob(runId).then((j) => j?.getState())) === "failed", 20_000, () => "the lost run to be failed");
    // The audit row is written by the worker that noticed, just after BullMQ moved the job.
    await waitFor(() => s.auditRows().at(-1)?.type === "sandcastle_run_failed", 5000, () => "the worker_lost audit row");
    expect(s.auditRows().at(-1)).toMatchObject({ type: "sandcastle_run_failed", run_id: runId, failure_reason: "worker_lost" });
    expect(s.auditRows().filter((r) => r.type === "sandcastle_run_started")).toHaveLength(1);
    // Removed beside the audit row (not after it): give it the moment it takes.
    await waitFor(() => readdirSync(s.configDir).length === 0, 5000, () => `the run directory to be removed (left: ${readdirSync(s.configDir).join(", ")})`);
  });
});

describe("graceful shutdown", () => {
  it("SIGTERM with an active job: no new jobs, the active one finishes, exit 0", async () => {
    const w = await startWorker();
    const pending = enqueue(s.request({}, { FAKE_MODE: "hold", HOLD_MS: "2500" }));
    await waitFor(() => readdirSync(s.outDir).some((f) => f.startsWith("started-")), 15_000);
    const t0 = Date.now();
    const stopped = w.stop("SIGTERM", 20_000);
    const late = await enqueue(s.request({}, { FAKE_MODE: "ok" }), false);
    expect(await stopped).toBe(0);
    expect(Date.now() - t0).toBeGreaterThan(1000);
    expect((await pending).result?.status).toBe("ok");
    expect(await s.queue.getJob(late.jobLine.job_id!).then((j) => j?.getState())).toBe("waiting");
  });

  it("an active job longer than the grace is stopped (killed / worker_shutdown) and the worker still exits 0", async () => {
    const w = await startWorker({ SCQ_SHUTDOWN_GRACE_SECONDS: "1" });
    const pending = enqueue(s.request({}, { FAKE_MODE: "sleep" }));
    await waitFor(() => readdirSync(s.outDir).some((f) => f.startsWith("started-")), 15_000);
    expect(await w.stop("SIGTERM", 15_000)).toBe(0);
    expect((await pending).result).toMatchObject({ status: "killed", failure_reason: "worker_shutdown" });
  });
});
