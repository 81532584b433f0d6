// The real path under load and on the way out: agent → Sandcastle → the built-in child → worker →
// session log, on the real library with the script agent. One worker and one repo for the whole
// file (a worker start is seconds on a loaded machine); the SIGTERM case restarts it, the SIGKILL case comes last.
import { execFileSync } from "node:child_process";
import { existsSync, mkdirSync, readdirSync, readFileSync, rmSync, statSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join, resolve } from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { readRunResult } from "../../../queues/index.js";
import { SandcastleRunResult } from "../../../src/sandcastle/contract.js";
import { CLI, CliProcess, lastJsonLine, runCli, stopAllCli, waitFor } from "../../helpers/cli.js";
import { makeGitRepo, RunScope } from "../../helpers/run-scope.js";

const ECHO_SECRET = resolve(import.meta.dirname, "../../fixtures/sandcastle/echo-secret");
// Unique to this run of the file: other tests on this machine must not be able to plant it in /tmp.
const SECRET = `sk-ant-api03-realpath-${process.pid}-${Date.now().toString(36)}-Zq8vN3bLxP0w`;

let s: RunScope;
let repo: string;
let worker: CliProcess;
let branchNo = 0;

beforeAll(async () => {
  s = new RunScope();
  repo = join(s.dir.path, "repo");
  makeGitRepo(repo);
  worker = new CliProcess(["worker"], env());
  await worker.waitForOutput(/workers running/);
}, 60_000);
afterAll(async () => {
  await stopAllCli();
  await s.close();
});

function env(): NodeJS.ProcessEnv {
  // The built-in child (SANDCASTLE_BIN empty means unset), this file's own secret; a shutdown stops a run after 1 s.
  return s.env({ SANDCASTLE_BIN: "", ANTHROPIC_API_KEY: SECRET, SCQ_SHUTDOWN_GRACE_SECONDS: "1" });
}

function request(extraEnv: Record<string, string>, patch: Record<string, unknown> = {}): Record<string, unknown> {
  branchNo += 1;
  return s.request({ prompt_template_dir: ECHO_SECRET, repo_workdir: repo, branch: `agent/real-${branchNo}`, ...patch }, extraEnv);
}

async function enqueueWait(req: Record<string, unknown>): Promise<SandcastleRunResult> {
  const res = await runCli(["enqueue", "sandcastle-run", "--request", "-", "--wait"], env(), { input: JSON.stringify(req), timeoutMs: 120_000 });
  expect(res.code, res.stderr).toBe(0);
  return SandcastleRunResult.parse(lastJsonLine(res.stdout));
}

/** `sh -c` with the CLI as `$CLI`: what a user types, pipes included. */
function shell(script: string): Buffer {
  return execFileSync("sh", ["-c", script], { env: { ...env(), CLI: `${process.execPath} ${CLI}` }, maxBuffer: 64 * 2 ** 20 });
}

/** The run's result line as `enqueue --wait` writes it (JSON of the stored result): what a file gets. */
async function resultLine(runId: string): Promise<string> {
  const job = await s.queue.getJob(runId);
  return `${JSON.stringify(await readRunResult(s.redis, s.queue, job!))}\n`;
}

async function sessionLines(sessionId: string): Promise<string[]> {
  const res = await runCli(["logs", sessionId], env());
  return res.stdout.split("\n").slice(0, -1);
}

/** Files under `dirs` holding the secret, raw. */
function filesHoldingSecret(dirs: string[]): string[] {
  const found: string[] = [];
  for (const dir of dirs) {
    try {
      found.push(...execFileSync("grep", ["-rlsF", "--binary-files=text", SECRET, dir], { encoding: "utf8" }).split("\n").filter(Boolean));
    } catch {
      // grep exits 1 when nothing matched
    }
  }
  return found;
}

const runStarted = () => existsSync(join(s.outDir, "agent-started"));
/** Before a run whose start a test waits for. */
const forgetStart = () => rmSync(join(s.outDir, "agent-started"), { force: true });

describe("the real path", () => {
  it("a result of several MB and a long log reach a pipe whole, byte for byte what a file gets: `enqueue --wait | tail -1`, `logs | wc -c`", async () => {
    const req = request({ BIG_TAIL: "1" });
    const last = shell(`printf '%s' '${JSON.stringify(req)}' | $CLI enqueue sandcastle-run --request - --wait | tail -1`).toString("utf8");
    const result = SandcastleRunResult.parse(JSON.parse(last));
    expect(result.status).toBe("ok");
    expect(last.length).toBeGreaterThan(2.5 * 2 ** 20);
    expect(result.log_tail.filter((l) => l === "q".repeat(61440)).length).toBeGreaterThanOrEqual(40);
    // A file gets the run's result line whole (a second run: each enqueue is a new one), and the pipe got this run's the same.
    const fileOut = join(s.dir.path, "result.txt");
    shell(`printf '%s' '${JSON.stringify(request({ BIG_TAIL: "1" }))}' | $CLI enqueue sandcastle-run --request - --wait > ${fileOut}`);
    const [jobLine, ...fileResult] = readFileSync(fileOut, "utf8").split(/(?<=\n)/);
    const fileRunId = (JSON.parse(jobLine!) as { job_id: string }).job_id;
    expect(fileResult).toHaveLength(1);
    expect(fileResult[0]!.length).toBeGreaterThan(2.5 * 2 ** 20);
    expect(fileResult[0] === (await resultLine(fileRunId)), "the file's result line is the stored result").toBe(true);
    const expected = await resultLine(result.run_id);
    expect(Buffer.byteLength(last)).toBe(Buffer.byteLength(expected));
    expect(last === expected, "the piped result line is, byte for byte, the line a file gets").toBe(true);

    const sid = String(req.session_id);
    const piped = Number(shell(`$CLI logs ${sid} | wc -c`).toString().trim());
    const toFile = join(s.dir.path, "logs.txt");
    shell(`$CLI logs ${sid} > ${toFile}`);
    expect(piped).toBe(statSync(toFile).size);
    expect(piped).toBeGreaterThan(2.5 * 2 ** 20);
  });

  it("the session log and log_tail hold what the agent printed, redacted, with short phase lines; the run's one ending last", async () => {
    const req = request({});
    const result = await enqueueWait(req);
    expect(result.status).toBe("ok");
    const lines = await sessionLines(String(req.session_id));
    // As `logs` shows them (ADR 0045): the agent's behind the gutter, ours at the margin; stored (log_tail), ours start with RS.
    expect(lines).toContain("│ raw [REDACTED]");
    expect(lines).toContain("│ json {\"key\":\"[REDACTED]\"}");
    expect(lines).toContain("│ agent done");
    expect(lines.find((l) => l.startsWith("── run started on agent/real-"))).toBeDefined();
    expect(lines.at(-1)).toBe(`── run ok: ${result.message}`);
    expect(result.log_tail.at(-1)).toBe(`\u001e${lines.at(-1)}`);
    // No protocol JSON, no record marker
    expect(lines.filter((l) => l.replace(/^│ /, "").startsWith("{") || l.includes("\u001e") || l.includes('"type"'))).toEqual([]);
  });

  it("the kill switch mid-run: one reason, the same in the result and at the end of the log", async () => {
    forgetStart();
    const req = request({ MODE: "sleep" });
    const running = runCli(["enqueue", "sandcastle-run", "--request", "-", "--wait"], env(), { input: JSON.stringify(req), timeoutMs: 120_000 });
    await waitFor(async () => runStarted(), 60_000);
    await runCli(["killswitch", "on"], env());
    try {
      const result = SandcastleRunResult.parse(lastJsonLine((await running).stdout));
      expect(result).toMatchObject({ status: "killed", failure_reason: "kill_switch_mid_run" });
      const lines = await sessionLines(String(req.session_id));
      expect(lines.at(-1)).toMatch(/^── run killed \(kill_switch_mid_run\)/);
      expect(result.log_tail.at(-1)).toBe(`\u001e${lines.at(-1)}`);
      expect(lines.join("\n")).not.toContain("cancelled");
    } finally {
      await runCli(["killswitch", "off"], env());
    }
  });

  it("SIGTERM mid-run, past the shutdown grace: one reason, worker_shutdown, in the result, the job, the audit and at the end of the log", async () => {
    forgetStart();
    const req = request({ MODE: "sleep" });
    const running = runCli(["enqueue", "sandcastle-run", "--request", "-", "--wait"], env(), { input: JSON.stringify(req), timeoutMs: 120_000 });
    await waitFor(async () => runStarted(), 60_000);
    expect(await worker.stop("SIGTERM", 30_000)).toBe(0);
    const result = SandcastleRunResult.parse(lastJsonLine((await running).stdout));
    expect(result).toMatchObject({ status: "killed", failure_reason: "worker_shutdown" });
    expect((await s.queue.getJob(result.run_id))?.failedReason).toMatch(/^killed: worker_shutdown\b/);
    expect(s.auditRows().filter((r) => r.run_id === result.run_id && r.type === "sandcastle_run_failed")).toEqual([
      expect.objectContaining({ failure_reason: "worker_shutdown" }),
    ]);
    const lines = await sessionLines(String(req.session_id));
    expect(lines.at(-1)).toMatch(/^── run killed \(worker_shutdown\)/);
    expect(result.log_tail.at(-1)).toBe(`\u001e${lines.at(-1)}`);
    // The child was stopped as for a cancel; that word must not surface as a second reason.
    expect(lines.join("\n")).not.toContain("cancelled");
    expect(result.message).not.toContain("cancelled");
    worker = new CliProcess(["worker"], env());
    await worker.waitForOutput(/workers running/);
  });

  it("no raw secret on disk after runs that end ok, timeout, cancelled, and a worker SIGKILL; no run directory or Sandcastle log left, a dead run's swept when a run is declared lost", async () => {
    // ok: the runs above. timeout:
    const timedOut = await enqueueWait(request({ MODE: "sleep" }, { timeout_minutes: 0.05 }));
    expect(timedOut.status).toBe("timeout");

    // cancelled, with a look at Sandcastle's log while the run is on: 0600 in the run's 0700 directory.
    forgetStart();
    const cancelled = runCli(["enqueue", "sandcastle-run", "--request", "-", "--wait"], env(), {
      input: JSON.stringify(request({ MODE: "sleep" })),
      timeoutMs: 120_000,
    });
    await waitFor(async () => runStarted(), 60_000);
    const [runDir] = readdirSync(s.configDir);
    expect(statSync(join(s.configDir, runDir!)).mode & 0o777).toBe(0o700);
    expect(statSync(join(s.configDir, runDir!, "sandcastle-logs", "run.log")).mode & 0o777).toBe(0o600);
    await runCli(["cancel", runDir!.replace(/^scq-run-/, "")], env());
    expect(SandcastleRunResult.parse(lastJsonLine((await cancelled).stdout)).failure_reason).toBe("cancelled");

    // worker SIGKILL mid-run; a new worker declares the run lost.
    forgetStart();
    const lost = await runCli(["enqueue", "sandcastle-run", "--request", "-"], env(), { input: JSON.stringify(request({ MODE: "sleep" })) });
    const runId = (JSON.parse(lost.stdout) as { job_id: string }).job_id;
    await waitFor(async () => runStarted(), 60_000);
    worker.child.kill("SIGKILL");
    await worker.waitExit();
    await waitFor(async () => readdirSync(s.configDir).length > 0 && existsSync(join(s.configDir, `scq-run-${runId}`)), 5_000);
    worker = new CliProcess(["worker"], env());
    await worker.waitForOutput(/workers running/);
    // A dead run's directory (this deployment's) that appears after the start's sweep goes when the worker declares a run lost.
    const dead = join(s.configDir, "scq-run-run-00000000-0000-0000-0000-00000000dead");
    mkdirSync(dead, { mode: 0o700 });
    writeFileSync(join(dead, "deployment"), `${s.deployment}\n`);
    await waitFor(async () => (await s.queue.getJob(runId))?.failedReason !== undefined, 60_000);
    await waitFor(async () => readdirSync(s.configDir).length === 0, 10_000);

    expect(filesHoldingSecret([tmpdir(), "/tmp", "/dev/shm", s.dir.path])).toEqual([]);
    // Nothing of these runs in /tmp (other tests on the machine may leave their own there).
    const runIds = (await s.queue.getJobs(["completed", "failed"])).map((j) => String(j.id));
    expect(runIds.length).toBeGreaterThanOrEqual(6);
    expect(readdirSync("/tmp").filter((n) => runIds.some((id) => n.includes(id)))).toEqual([]);
  });
});
