// The real path under load and on the way out: agent → Sandcastle → the built-in child → worker →
// session log, on the real library with the script agent. One worker and one repo for the whole
// file (a worker start is seconds on a loaded machine); the worker SIGKILL case comes last.
import { execFileSync } from "node:child_process";
import { existsSync, mkdirSync, readdirSync, rmSync, statSync } from "node:fs";
import { tmpdir } from "node:os";
import { join, resolve } from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
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
  // The built-in child (SANDCASTLE_BIN empty means unset), this file's own secret.
  return s.env({ SANDCASTLE_BIN: "", ANTHROPIC_API_KEY: SECRET });
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
  it("a result of several MB and a long log reach a pipe whole: `enqueue --wait | tail -1`, `logs | wc -c`", async () => {
    const req = request({ BIG_TAIL: "1" });
    const last = shell(`printf '%s' '${JSON.stringify(req)}' | $CLI enqueue sandcastle-run --request - --wait | tail -1`).toString("utf8");
    const result = SandcastleRunResult.parse(JSON.parse(last));
    expect(result.status).toBe("ok");
    expect(last.length).toBeGreaterThan(2.5 * 2 ** 20);
    expect(result.log_tail.filter((l) => l === "q".repeat(61440)).length).toBeGreaterThanOrEqual(40);

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
    expect(lines).toContain("raw [REDACTED]");
    expect(lines).toContain("json {\"key\":\"[REDACTED]\"}");
    expect(lines).toContain("agent done");
    expect(lines.find((l) => l.startsWith("── run started on agent/real-"))).toBeDefined();
    expect(lines.at(-1)).toBe(`── run ok: ${result.message}`);
    expect(result.log_tail.at(-1)).toBe(lines.at(-1));
    // No protocol JSON, no record marker
    expect(lines.filter((l) => l.startsWith("{") || l.includes("\u001e") || l.includes('"type"'))).toEqual([]);
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
      expect(result.log_tail.at(-1)).toBe(lines.at(-1));
      expect(lines.join("\n")).not.toContain("cancelled");
    } finally {
      await runCli(["killswitch", "off"], env());
    }
  });

  it("no raw secret on disk after runs that end ok, timeout, cancelled, and a worker SIGKILL; no run directory or Sandcastle log left, a dead run's swept when a run is declared lost", async () => {
    // ok: the runs above. timeout:
    const timedOut = await enqueueWait(request({ MODE: "sleep" }, { timeout_minutes: 0.05 }));
    expect(timedOut.status).toBe("timeout");

    // cancelled, with a look at Sandcastle's log while the run is on: 0600 in the run's 0700 directory.
    forgetStart();
    const cancelled = runCli(["enqueue", "sandcastle-run", "--request", "-", "--wait"], env(), { input: JSON.stringify(request({ MODE: "sleep" })), timeoutMs: 120_000 });
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
    // A dead run's directory that appears after the start's sweep goes when the worker declares a run lost.
    mkdirSync(join(s.configDir, "scq-run-run-00000000-0000-0000-0000-00000000dead"), { mode: 0o700 });
    await waitFor(async () => (await s.queue.getJob(runId))?.failedReason !== undefined, 60_000);
    await waitFor(async () => readdirSync(s.configDir).length === 0, 10_000);

    expect(filesHoldingSecret([tmpdir(), "/tmp", "/dev/shm", s.dir.path])).toEqual([]);
    // Nothing of these runs in /tmp (other tests on the machine may leave their own there).
    const runIds = (await s.queue.getJobs(["completed", "failed"])).map((j) => String(j.id));
    expect(runIds.length).toBeGreaterThanOrEqual(6);
    expect(readdirSync("/tmp").filter((n) => runIds.some((id) => n.includes(id)))).toEqual([]);
  });
});
