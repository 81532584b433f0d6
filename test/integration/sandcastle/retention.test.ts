// Retained run workspaces without a container engine: real worker processes, the real child and Sandcastle
// library (dry runs, script agent), real Redis and real directories. What is kept (ok, failed or timed out), its reap at its time, a
// pin moving the one reap job, 0 = off sweeping, a request reaching into RUNS_DIR, and bad input. (Opening a sandbox: containers/sandbox-open.)
import { execFileSync } from "node:child_process";
import { cpSync, existsSync, mkdirSync, readdirSync, readFileSync, rmSync, statSync, writeFileSync } from "node:fs";
import { join, resolve } from "node:path";
import { Queue } from "bullmq";
import { afterEach, beforeEach, describe, expect, it } from "vitest";
import { newRunId, readRunResult, RUN_JOB, RUN_JOB_OPTIONS } from "../../../queues/index.js";
import { reapDueAt, reapJobId, SANDBOX_RETENTION_QUEUE } from "../../../queues/sandbox-retention.js";
import { DEFAULT_SANDBOX_IMAGE } from "../../../src/sandcastle/containers/container-args.js";
import { SandcastleRunResult } from "../../../src/sandcastle/contract.js";
import { RetainedMeta, writeMeta } from "../../../src/sandcastle/retention/retained-runs.js";
import { ownIdentity } from "../../../src/process-identity.js";
import { CliProcess, lastJsonLine, runCli, stopAllCli, waitFor } from "../../helpers/cli.js";
import { makeGitRepo, RunScope, SECRET_VALUE } from "../../helpers/run-scope.js";

const TEMPLATE = resolve(import.meta.dirname, "../../fixtures/sandcastle/leave-uncommitted");
const H = 3_600_000;
const D = 24 * H;

let s: RunScope;
let repo: string;
let retention: Queue;

beforeEach(() => {
  s = new RunScope();
  repo = join(s.dir.path, "repo");
  makeGitRepo(repo);
  retention = new Queue(SANDBOX_RETENTION_QUEUE, { connection: s.redis, prefix: s.prefix });
});
afterEach(async () => {
  await stopAllCli();
  await retention.close();
  await s.close();
});

const env = (extra: Record<string, string> = {}) => s.env({ SANDCASTLE_BIN: "", ...extra });

async function startWorker(extra: Record<string, string> = {}): Promise<CliProcess> {
  const w = new CliProcess(["worker"], env({ LOG_LEVEL: "info", ...extra }));
  await w.waitForOutput(/workers running/, 60_000);
  return w;
}

async function run(
  branch: string,
  extra: Record<string, string> = {},
  patch: Record<string, unknown> = {},
  agentEnv: Record<string, string> = {},
): Promise<SandcastleRunResult> {
  const request = s.request({ prompt_template_dir: TEMPLATE, repo_workdir: repo, branch, ...patch }, agentEnv);
  const res = await runCli(["enqueue", "sandcastle-run", "--request", "-", "--wait"], env(extra), { input: JSON.stringify(request), timeoutMs: 120_000 });
  expect(res.code, res.stderr).toBe(0);
  const result = SandcastleRunResult.parse(lastJsonLine(res.stdout));
  await s.keepSettled(result.run_id);
  return result;
}

const dirOf = (runId: string) => join(s.runsDir, runId);
const metaOf = (runId: string) => RetainedMeta.parse(JSON.parse(readFileSync(join(dirOf(runId), "retained.json"), "utf8")));
const git = (cwd: string, ...args: string[]) => execFileSync("git", ["-c", "safe.directory=*", ...args], { cwd, encoding: "utf8" }).trim();
const mode = (p: string) => statSync(p).mode & 0o777;

/** Every file under `dir` whose bytes hold `needle`. */
function filesHolding(dir: string, needle: string): string[] {
  const out = execFileSync("grep", ["-rlF", "--", needle, dir], { encoding: "utf8", stdio: ["ignore", "pipe", "ignore"] }).trim();
  return out === "" ? [] : out.split("\n");
}
function grepFiles(dir: string, needle: string): string[] {
  try {
    return filesHolding(dir, needle);
  } catch {
    return []; // grep exits 1 when nothing matches
  }
}

/**
 * What every ended run keeps (whatever its status): the workspace as the agent left it, the run's files, no transcript,
 * no secret; one reap job at its end + window.
 */
async function expectKept(result: SandcastleRunResult, branch: string): Promise<RetainedMeta> {
  const dir = dirOf(result.run_id);
  expect(mode(s.runsDir)).toBe(0o700);
  expect(mode(dir)).toBe(0o700);

  // The workspace works on its own: its .git is a directory (not a worktree's pointer to the host repo).
  const ws = join(dir, "workspace");
  expect(statSync(join(ws, ".git")).isDirectory()).toBe(true);
  expect(git(ws, "rev-parse", "--abbrev-ref", "HEAD")).toBe(branch);
  expect(git(ws, "rev-parse", "HEAD")).toBe(git(repo, "rev-parse", branch));
  expect(git(ws, "log", "-1", "--format=%s")).toBe("agent: done.txt");
  expect(readFileSync(join(ws, "done.txt"), "utf8")).toBe("done\n");
  expect(readFileSync(join(ws, "wip.txt"), "utf8")).toBe("work in progress\n");
  expect(git(ws, "status", "--porcelain")).toBe("?? wip.txt");
  expect(existsSync(join(ws, ".claude", "projects"))).toBe(false);

  const job = join(dir, "job");
  expect(JSON.parse(readFileSync(join(job, "request.json"), "utf8"))).toMatchObject({ branch, repo_workdir: repo, session_id: expect.any(String) });
  expect(readdirSync(join(job, "prompt"))).toEqual(["prompt.md"]);
  const log = readFileSync(join(job, "session.log"), "utf8");
  expect(log).toContain("committed done.txt, left wip.txt");
  expect(log).toMatch(/key is \S*\[REDACTED/);
  expect(log).toContain(`── run ${result.status}`);
  expect(SandcastleRunResult.parse(JSON.parse(readFileSync(join(job, "result.json"), "utf8")))).toMatchObject({
    status: result.status,
    failure_reason: result.failure_reason,
  });
  // No secret value anywhere in what is retained (the agent printed it; the log holds it redacted).
  expect(grepFiles(dir, SECRET_VALUE)).toEqual([]);

  const meta = metaOf(result.run_id);
  expect(meta).toMatchObject({
    run_id: result.run_id,
    branch,
    status: result.status,
    provider: "noSandbox",
    image: DEFAULT_SANDBOX_IMAGE,
    worktree_path: "/home/agent/workspace",
    pinned_until: null,
  });
  const due = await reapDueAt(s.redis, retention, result.run_id);
  expect(due).not.toBeNull();
  expect(Math.abs(due! - (Date.parse(meta.ended_at) + 24 * H))).toBeLessThan(5000);
  expect((await retention.getJobs(["delayed", "waiting", "active"])).map((j) => j.id)).toContain(reapJobId(result.run_id));
  return meta;
}

describe("keep", () => {
  it("a finished run's workspace is retained whole: a standalone clone with the agent's uncommitted files, the run's files, no transcript, no secret; one reap job at its end + window", async () => {
    await startWorker();
    const result = await run("agent/keep");
    expect(result.status).toBe("ok");
    await expectKept(result, "agent/keep");
    expect((await retention.getJobs(["delayed", "waiting", "active"])).map((j) => j.id)).toEqual([reapJobId(result.run_id)]);

    const list = await runCli(["sandbox", "list", "--json"], env());
    expect(list.code, list.stderr).toBe(0);
    const listed = JSON.parse(list.stdout) as { runs: Array<Record<string, unknown>> };
    expect(listed.runs).toHaveLength(1);
    expect(listed.runs[0]).toMatchObject({ run_id: result.run_id, branch: "agent/keep", open: false, state: "23h left" });
    expect(listed.runs[0]!.bytes).toBeGreaterThan(0);
    const text = await runCli(["sandbox", "list"], env());
    expect(text.stdout).toMatch(new RegExp(`^${result.run_id}  \\S+  agent/keep  ok  [0-9.]+ KiB  23h left\\n$`));

    const status = await runCli(["status", "--json"], env());
    expect((JSON.parse(status.stdout) as { retained: unknown }).retained).toEqual({ count: 1, bytes: listed.runs[0]!.bytes, runs_dir: s.runsDir });
    expect((await runCli(["status"], env())).stdout).toMatch(/retained workspaces: 1 \([0-9.]+ KiB\)/);
  }, 180_000);
});

describe("keep, whatever the ending", () => {
  it("a run whose agent exits non-zero (failed) and one past its timeout are retained whole too, each with its reap job", async () => {
    await startWorker();
    const failed = await run("agent/keep-failed", {}, {}, { AGENT_EXIT: "3" });
    expect(failed).toMatchObject({ status: "failed", failure_reason: "agent_failed" });
    await expectKept(failed, "agent/keep-failed");
    // 6 s: the agent sleeps past it, and is stopped (SIGTERM to its group, then SIGKILL) before it would exit.
    const timedOut = await run("agent/keep-timeout", {}, { timeout_minutes: 0.1 }, { AGENT_SLEEP: "120" });
    expect(timedOut).toMatchObject({ status: "timeout", failure_reason: "timeout" });
    expect(readFileSync(join(dirOf(timedOut.run_id), "job", "session.log"), "utf8")).toContain("── run timeout (timeout): timed out after 0.1 min");
    await expectKept(timedOut, "agent/keep-timeout");
    expect((await retention.getJobs(["delayed", "waiting", "active"])).map((j) => j.id).sort()).toEqual(
      [reapJobId(failed.run_id), reapJobId(timedOut.run_id)].sort(),
    );
  }, 180_000);
});

describe("a request reaching into RUNS_DIR", () => {
  it("is refused at enqueue; one that reaches the worker anyway (another producer) fails invalid_payload before it starts, and keeps nothing", async () => {
    await startWorker();
    const kept = await run("agent/kept");
    const workspace = join(dirOf(kept.run_id), "workspace");
    const head = git(workspace, "rev-parse", "HEAD");
    const intruder = s.request({ prompt_template_dir: TEMPLATE, repo_workdir: workspace, branch: "agent/kept" });
    const refused = await runCli(["enqueue", "sandcastle-run", "--request", "-"], env(), { input: JSON.stringify(intruder) });
    expect(refused.code).toBe(1);
    expect(refused.stderr).toBe(
      `sandcastle-queue: invalid sandcastle-run request: repo_workdir: ${workspace} lies inside RUNS_DIR ${s.runsDir}: retained run workspaces are never mounted into another run\n`,
    );
    expect(await s.queue.count()).toBe(0);

    const runId = newRunId();
    await s.queue.add(RUN_JOB, intruder, { ...RUN_JOB_OPTIONS, jobId: runId });
    const job = (await s.queue.getJob(runId))!;
    await waitFor(async () => (await job.getState()) === "failed", 60_000, () => "the intruding run to fail");
    expect(await readRunResult(s.redis, s.queue, (await s.queue.getJob(runId))!)).toMatchObject({
      status: "failed",
      failure_reason: "invalid_payload",
      message: `repo_workdir ${workspace} lies inside RUNS_DIR ${s.runsDir}: retained run workspaces are never mounted into another run`,
    });
    expect(s.auditRows().filter((r) => r.run_id === runId).map((r) => r.type)).toEqual(["sandcastle_run_failed"]);
    expect(readdirSync(s.configDir)).toEqual([]);
    expect(readdirSync(s.runsDir)).toEqual([kept.run_id]);
    expect(git(workspace, "rev-parse", "HEAD")).toBe(head);
    expect(git(workspace, "status", "--porcelain")).toBe("?? wip.txt");
    expect(await retention.getJob(reapJobId(runId))).toBeUndefined();
  }, 180_000);
});

describe("reap", () => {
  it("deletes the directory at its time (a short window), not before; a reap of a directory already gone completes quietly; a bad one fails alone", async () => {
    await startWorker({ SANDBOX_RETENTION_HOURS: "0.003" }); // 10.8 s
    const result = await run("agent/reap", { SANDBOX_RETENTION_HOURS: "0.003" });
    const dir = dirOf(result.run_id);
    expect(existsSync(dir)).toBe(true);
    const due = Date.parse(metaOf(result.run_id).ended_at) + 0.003 * H;
    await waitFor(
      () => !existsSync(dir),
      60_000,
      () => `${dir} removed`,
    );
    expect(Date.now()).toBeGreaterThanOrEqual(due);
    const job = await retention.getJob(reapJobId(result.run_id));
    await waitFor(async () => (await job!.getState()) === "completed", 10_000);
    expect((await retention.getJob(reapJobId(result.run_id)))!.returnvalue).toEqual({ run_id: result.run_id, removed: true, note: null });

    const gone = "run-00000000-0000-4000-8000-000000000000";
    const bad = await retention.add("reap", { run_id: "../../etc" }, { jobId: "reap-bad" });
    const quiet = await retention.add("reap", { run_id: gone }, { jobId: reapJobId(gone) });
    await waitFor(async () => (await quiet.getState()) === "completed" && (await bad.getState()) === "failed", 20_000);
    expect((await retention.getJob(reapJobId(gone)))!.returnvalue).toEqual({ run_id: gone, removed: false, note: "already gone" });
    expect((await retention.getJob("reap-bad"))!.failedReason).toMatch(/^invalid sandbox-retention payload: run_id: must be a run id: run-<uuid>/);
  }, 180_000);
});

describe("pin", () => {
  it("moves the one reap job to now + SANDBOX_PIN_DAYS, and outlives a shorter window at the next worker start", async () => {
    const w = await startWorker();
    const result = await run("agent/pin");
    const before = await reapDueAt(s.redis, retention, result.run_id);
    const pin = await runCli(["sandbox", "pin", result.run_id], env());
    expect(pin.code, pin.stderr).toBe(0);
    const pinnedUntil = Date.parse(metaOf(result.run_id).pinned_until!);
    expect(Math.abs(pinnedUntil - (Date.now() + 7 * D))).toBeLessThan(30_000);
    expect(pin.stdout).toBe(`${result.run_id} pinned until ${new Date(pinnedUntil).toISOString()}\n`);
    const after = await reapDueAt(s.redis, retention, result.run_id);
    // The due time is computed from a delay, so it is the pin within the milliseconds of one call.
    expect(Math.abs(after! - pinnedUntil)).toBeLessThan(1000);
    expect(after!).toBeGreaterThan(before! + 5 * D);
    expect((await retention.getJobs(["delayed", "waiting", "active", "completed", "failed"])).map((j) => j.id)).toEqual([reapJobId(result.run_id)]);
    const list = JSON.parse((await runCli(["sandbox", "list", "--json"], env())).stdout) as { runs: Array<{ state: string }> };
    expect(list.runs.map((r) => r.state)).toEqual(["pinned, 6d left"]);

    // A much shorter window: the pin is a timestamp, so the run stays, and its job stays at the pin.
    await w.stop();
    await startWorker({ SANDBOX_RETENTION_HOURS: "0.001" });
    expect(existsSync(dirOf(result.run_id))).toBe(true);
    expect(Math.abs((await reapDueAt(s.redis, retention, result.run_id))! - pinnedUntil)).toBeLessThan(1000);
    expect((await retention.getJobs(["delayed", "waiting", "active"])).map((j) => j.id)).toEqual([reapJobId(result.run_id)]);
  }, 180_000);
});

describe("SANDBOX_RETENTION_HOURS=0", () => {
  it("is off: a worker starting with 0 sweeps what an earlier setting kept, pinned too, and keeps nothing new", async () => {
    const w = await startWorker();
    const first = await run("agent/off-1");
    const second = await run("agent/off-2");
    expect((await runCli(["sandbox", "pin", second.run_id], env())).code).toBe(0);
    await w.stop();

    await startWorker({ SANDBOX_RETENTION_HOURS: "0" });
    expect(existsSync(dirOf(first.run_id))).toBe(false);
    expect(existsSync(dirOf(second.run_id))).toBe(false);
    const third = await run("agent/off-3", { SANDBOX_RETENTION_HOURS: "0" });
    expect(third.status).toBe("ok");
    expect(readdirSync(s.runsDir)).toEqual([]);
    expect(await retention.getJob(reapJobId(third.run_id))).toBeUndefined();
  }, 180_000);
});

describe("boot sweep", () => {
  it("removes this deployment's unfinished (or cut short) directories of runs not active, never what is not named like a run nor what it cannot show is its own, and re-makes a lost reap job at the run's expiry", async () => {
    const w = await startWorker();
    const result = await run("agent/sweep");
    const ended = Date.parse(metaOf(result.run_id).ended_at);
    await w.stop();
    // A Redis that lost its jobs; a run of ours that died before it was retained; an operator's own file.
    await (await retention.getJob(reapJobId(result.run_id)))!.remove();
    // Retained before directories were marked (an older version): its run's job in our Redis shows it is ours.
    rmSync(join(dirOf(result.run_id), "deployment"));
    const ours = (path: string) => writeFileSync(join(path, "deployment"), `${s.deployment}\n`);
    const unfinished = dirOf("run-00000000-0000-4000-8000-00000000abcd");
    mkdirSync(join(unfinished, "job"), { recursive: true });
    writeFileSync(join(unfinished, "job", "session.log"), "half a run\n");
    ours(unfinished);
    mkdirSync(join(s.runsDir, "notes"));
    const cutShort = dirOf("run-00000000-0000-4000-8000-00000000abce");
    mkdirSync(cutShort);
    writeFileSync(join(cutShort, "retained.json"), '{"run_id": "run-0');
    ours(cutShort);
    // Unmarked, of a run this Redis does not know, and young: maybe an older version's live run, so left.
    const unknown = dirOf("run-00000000-0000-4000-8000-00000000abcf");
    mkdirSync(join(unknown, "job"), { recursive: true });
    // Retained and unmarked, of a run this Redis does not know: whose it is cannot be shown, so it is left, long expired or not.
    const unowned = "run-00000000-0000-4000-8000-00000000abd0";
    cpSync(dirOf(result.run_id), dirOf(unowned), { recursive: true });
    writeFileSync(
      join(dirOf(unowned), "retained.json"),
      JSON.stringify({ ...metaOf(result.run_id), run_id: unowned, ended_at: new Date(ended - 30 * D).toISOString() }),
    );

    const w2 = await startWorker();
    expect(existsSync(unfinished)).toBe(false);
    expect(existsSync(cutShort)).toBe(false);
    expect(existsSync(unknown)).toBe(true);
    expect(existsSync(join(s.runsDir, "notes"))).toBe(true);
    expect(existsSync(dirOf(result.run_id))).toBe(true);
    expect(readFileSync(join(dirOf(result.run_id), "deployment"), "utf8")).toBe(`${s.deployment}\n`);
    expect(Math.abs((await reapDueAt(s.redis, retention, result.run_id))! - (ended + 24 * H))).toBeLessThan(1000);
    expect(existsSync(dirOf(unowned))).toBe(true);
    expect(await retention.getJob(reapJobId(unowned))).toBeUndefined();
    await w2.waitForOutput(/left retained run workspaces that name no deployment/);
    expect(w2.stderr).toContain(unowned);
    const list = JSON.parse((await runCli(["sandbox", "list", "--json"], env())).stdout) as { runs: Array<{ run_id: string }> };
    expect(list.runs.map((r) => r.run_id)).toEqual([result.run_id]);
    const pin = await runCli(["sandbox", "pin", unowned], env());
    expect(pin.code).toBe(1);
    expect(pin.stderr).toBe(
      `sandcastle-queue: ${unowned} was retained before deployments were marked, by a run this deployment's Redis does not know: pin or open it with the settings of the deployment that ran it\n`,
    );
  }, 180_000);
});

describe("a workspace kept after its run's result (ADR 0051)", () => {
  it("the CLI waits for a run being kept and then lists and pins it; a boot sweep leaves it while its keeper runs, and removes it once its keeper is dead", async () => {
    const w = await startWorker();
    const result = await run("agent/keeper");
    const meta = metaOf(result.run_id);
    await w.stop();
    // The same run as its worker holds it between the result and retained.json: this test's process is the keeper.
    const being = "run-00000000-0000-4000-8000-00000000abd1";
    cpSync(dirOf(result.run_id), dirOf(being), { recursive: true });
    rmSync(join(dirOf(being), "retained.json"));
    writeFileSync(join(dirOf(being), ".keeping"), `${ownIdentity()}\n`);
    // A keeper that died mid-copy: this process's name with another start time is a process that no longer runs.
    const dead = "run-00000000-0000-4000-8000-00000000abd2";
    cpSync(dirOf(being), dirOf(dead), { recursive: true });
    writeFileSync(join(dirOf(dead), ".keeping"), `${ownIdentity().replace(/ \d+$/, " 1")}\n`);

    const w2 = await startWorker();
    expect(existsSync(dirOf(dead))).toBe(false);
    expect(existsSync(join(dirOf(being), "workspace"))).toBe(true);
    // `sandbox pin` and `sandbox list` wait for it, as an operator who read the result at once would.
    let answered = false;
    const pinning = runCli(["sandbox", "pin", being], env()).finally(() => (answered = true));
    const listing = runCli(["sandbox", "list", "--json"], env());
    await new Promise((resolve) => setTimeout(resolve, 3000));
    expect(answered).toBe(false);
    await writeMeta(s.runsDir, { ...meta, run_id: being });
    rmSync(join(dirOf(being), ".keeping"));
    const pin = await pinning;
    expect(pin.code, pin.stderr).toBe(0);
    expect(pin.stdout).toMatch(new RegExp(`^${being} pinned until `));
    const list = JSON.parse((await listing).stdout) as { runs: Array<{ run_id: string }> };
    expect(list.runs.map((r) => r.run_id).sort()).toEqual([result.run_id, being].sort());
    await w2.stop();
  }, 180_000);
});

describe("bad input", () => {
  it("a run id is run-<uuid> before it touches a path; unknown runs are refused in one line", async () => {
    for (const args of [["sandbox", "pin", "../../etc"], ["sandbox", "pin", "run-1"]]) {
      const res = await runCli(args, env());
      expect(res.code).toBe(1);
      expect(res.stderr).toMatch(/^sandcastle-queue: invalid run id: ".*" is not one: a run id is run-<uuid>\n$/);
    }
    const unknown = await runCli(["sandbox", "pin", "run-00000000-0000-4000-8000-000000000000"], env());
    expect(unknown.code).toBe(1);
    expect(unknown.stderr).toBe(
      "sandcastle-queue: run-00000000-0000-4000-8000-000000000000 is not retained (unknown run, or its workspace was already reaped): sandcastle-queue sandbox list shows what is\n",
    );
    // No terminal is the first refusal, whatever else is wrong.
    const noTty = await runCli(["sandbox", "open", "../../etc", "--publish", "0.0.0.0:80:80"], env());
    expect(noTty.code).toBe(1);
    expect(noTty.stderr).toBe(
      "sandcastle-queue: sandbox open needs a terminal: it starts an interactive shell, so stdin and stdout must be a TTY (not a pipe, a script or CI)\n",
    );
  }, 60_000);
});
