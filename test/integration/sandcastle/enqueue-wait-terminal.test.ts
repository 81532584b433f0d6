// `enqueue sandcastle-run --wait` in a real pseudo-terminal (script(1)), against a real worker and run child: every
// line of the run, in order, then the run's closing `── run ok` line, then the result — for a run whose last lines
// come slowly (after the wait's poll) and for a fast one (done before the first poll), and only that run's lines
// when its session has earlier runs. The worker's own log lines on stderr are JSON with one `pid`, its own.
import { spawn } from "node:child_process";
import { writeFileSync } from "node:fs";
import { join } from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { CLI, CliProcess, stopAllCli, waitFor } from "../../helpers/cli.js";
import { RunScope } from "../../helpers/run-scope.js";

let s: RunScope;
let worker: CliProcess;

beforeAll(async () => {
  s = new RunScope();
  worker = new CliProcess(["worker"], s.env({ LOG_LEVEL: "info" }));
  await worker.waitForOutput(/workers running/);
});
afterAll(async () => {
  await stopAllCli();
  await s?.close();
});

/** The CLI under script(1): stdin, stdout and stderr are one pseudo-terminal; what it shows, with \r\n as \n. */
function inTerminal(args: string[], env: NodeJS.ProcessEnv, timeoutMs = 60_000): Promise<{ code: number | null; lines: string[] }> {
  const command = [process.execPath, CLI, ...args].map((a) => `'${a}'`).join(" ");
  return new Promise((resolve, reject) => {
    // stdin stays open: script(1) would pass an EOF on to the terminal.
    const proc = spawn("script", ["-qfec", command, "/dev/null"], { env, stdio: ["pipe", "pipe", "pipe"] });
    let out = "";
    proc.stdout.on("data", (d: Buffer) => (out += d.toString()));
    proc.stderr.on("data", (d: Buffer) => (out += d.toString()));
    const timer = setTimeout(() => {
      proc.kill("SIGKILL");
      reject(new Error(`${args.join(" ")} did not end within ${timeoutMs} ms:\n${out}`));
    }, timeoutMs);
    proc.once("exit", (code) => {
      clearTimeout(timer);
      resolve({ code, lines: out.replace(/\r\n/g, "\n").split("\n") });
    });
  });
}

async function waitInTerminal(request: Record<string, unknown>): Promise<{ code: number | null; lines: string[] }> {
  const file = join(s.dir.path, `request-${Math.random().toString(36).slice(2)}.json`);
  writeFileSync(file, JSON.stringify(request));
  return inTerminal(["enqueue", "sandcastle-run", "--request", file, "--wait"], s.env({ TERM: "xterm" }));
}

/** Indices of the paced lines, the closing line and the result line; the paced lines as shown (log lines are indented, the agent's behind `│ `). */
function readOut(lines: string[], n: number) {
  const paced = lines.filter((l) => /^ {2}│ paced line \d+ of \d+$/.test(l)).map((l) => l.slice("  │ ".length));
  const lastPaced = lines.findLastIndex((l) => l === `  │ paced line ${n} of ${n}`);
  const closing = lines.findIndex((l) => /^ {2}── run ok\b/.test(l));
  const result = lines.findIndex((l) => l.startsWith('{"run_id"'));
  return { paced, lastPaced, closing, result };
}

const numbered = (n: number) => Array.from({ length: n }, (_, i) => `paced line ${i + 1} of ${n}`);

describe("enqueue --wait in a terminal", () => {
  const session = `sess-tty-${Date.now().toString(36)}`;

  it("a run whose last lines come slowly: every line in order, then `── run ok`, then the result JSON, exit 0", async () => {
    const { code, lines } = await waitInTerminal(s.request({ session_id: session }, { FAKE_MODE: "paced", LINES: "6", PACE_MS: "450" }));
    expect(code, lines.join("\n")).toBe(0);
    const { paced, lastPaced, closing, result } = readOut(lines, 6);
    expect(paced, lines.join("\n")).toEqual(numbered(6));
    expect(closing, lines.join("\n")).toBeGreaterThan(lastPaced);
    expect(result, lines.join("\n")).toBeGreaterThan(closing);
    expect(JSON.parse(lines[result]!)).toMatchObject({ status: "ok" });
    // The phases are shown too, on their own lines.
    expect(lines.some((l) => /^\[run-[0-9a-f-]+\] (waiting|queued|preflight|running)$/.test(l))).toBe(true);
  });

  it("a fast run in the same session (done before the first poll): its own lines only, all of them in order, then `── run ok`, then the result", async () => {
    const { code, lines } = await waitInTerminal(s.request({ session_id: session }, { FAKE_MODE: "paced", LINES: "40", PACE_MS: "0" }));
    expect(code, lines.join("\n")).toBe(0);
    const { paced, lastPaced, closing, result } = readOut(lines, 40);
    // None of the earlier run's "… of 6" lines: the session's log holds them, this run did not print them.
    expect(paced, lines.join("\n")).toEqual(numbered(40));
    expect(lines.filter((l) => /^ {2}── run ok\b/.test(l))).toHaveLength(1);
    expect(closing).toBeGreaterThan(lastPaced);
    expect(result).toBeGreaterThan(closing);
    expect(JSON.parse(lines[result]!)).toMatchObject({ status: "ok" });
  });

  it("a run that fails shows its closing line with the reason before the result, exit 0 (a result came back)", async () => {
    const { code, lines } = await waitInTerminal(s.request({}, { FAKE_MODE: "fail" }));
    expect(code, lines.join("\n")).toBe(0);
    const closing = lines.findIndex((l) => /^ {2}── run failed \(agent_unavailable\)/.test(l));
    const result = lines.findIndex((l) => l.startsWith('{"run_id"'));
    expect(closing, lines.join("\n")).toBeGreaterThan(-1);
    expect(result).toBeGreaterThan(closing);
  });

  it("the worker's log on stderr: every line is JSON with one pid, the worker's own; a run child's pid is child_pid", async () => {
    await waitFor(() => worker.stderr.includes("run child started"), 10_000);
    const lines = worker.stderr.split("\n").filter((l) => l.length > 0);
    for (const line of lines) {
      expect(() => JSON.parse(line), line).not.toThrow();
      expect(line.match(/"pid":/g), line).toHaveLength(1);
      expect((JSON.parse(line) as { pid: number }).pid).toBe(worker.pid);
    }
    const started = lines.map((l) => JSON.parse(l) as { msg: string; child_pid?: number }).filter((l) => l.msg === "run child started");
    expect(started.length).toBeGreaterThanOrEqual(3);
    for (const l of started) expect(l.child_pid).toEqual(expect.any(Number));
  });
});
