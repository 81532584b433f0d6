// Run the compiled CLI as a real process (tests build first: `pretest`), and stop every process we start.
import { spawn, type ChildProcess } from "node:child_process";
import { mkdtempSync } from "node:fs";
import { join, resolve } from "node:path";
import { shellQuote } from "../../src/sandcastle/shell-quote.js";

export const CLI = resolve(import.meta.dirname, "../../dist/src/cli/main.js");

export interface CliResult {
  code: number | null;
  stdout: string;
  stderr: string;
}

/**
 * The state dir of this test process's CLIs (XDG_STATE_HOME), inside the run's own (global-setup.ts): the user's list
 * of embedded Redis servers and the default ledgers live there, so a test's service is never in the real user's list,
 * nor seen by another test file running beside this one.
 */
let stateHome: string | undefined;
function testStateHome(): string | undefined {
  const root = process.env.SCQ_TEST_STATE_ROOT;
  if (root === undefined) return undefined;
  // Not named after the pid: pids come round again within one run.
  stateHome ??= mkdtempSync(join(root, "p-"));
  return stateHome;
}

/** Env for a CLI child: only what the test gives plus PATH/HOME, so the developer's env cannot leak in. */
export function cliEnv(extra: Record<string, string | undefined>): NodeJS.ProcessEnv {
  const env: NodeJS.ProcessEnv = { PATH: process.env.PATH, HOME: process.env.HOME, LOG_LEVEL: "warn" };
  // A test that gives a HOME of its own means that home's state dir.
  const state = "HOME" in extra ? undefined : testStateHome();
  if (state !== undefined) env.XDG_STATE_HOME = state;
  for (const [k, v] of Object.entries(extra)) if (v !== undefined) env[k] = v;
  return env;
}

export function runCli(args: string[], env: NodeJS.ProcessEnv, opts: { input?: string; cwd?: string; timeoutMs?: number } = {}): Promise<CliResult> {
  return runProgram(process.execPath, [CLI, ...args], env, opts);
}

/** Any program (a path, or a name looked up on env.PATH) to its end, its output collected; SIGKILLed past the timeout. */
export function runProgram(
  bin: string,
  args: string[],
  env: NodeJS.ProcessEnv,
  opts: { input?: string; cwd?: string; timeoutMs?: number } = {},
): Promise<CliResult> {
  return new Promise((resolvePromise, reject) => {
    const child = spawn(bin, args, { env, cwd: opts.cwd, stdio: ["pipe", "pipe", "pipe"] });
    let stdout = "";
    let stderr = "";
    child.stdout.on("data", (d: Buffer) => (stdout += d.toString()));
    child.stderr.on("data", (d: Buffer) => (stderr += d.toString()));
    const timer = setTimeout(() => {
      child.kill("SIGKILL");
      reject(new Error(`${bin} ${args.join(" ")} timed out\nstdout: ${stdout}\nstderr: ${stderr}`));
    }, opts.timeoutMs ?? 30_000);
    child.on("error", reject);
    child.on("close", (code) => {
      clearTimeout(timer);
      resolvePromise({ code, stdout, stderr });
    });
    child.stdin.end(opts.input ?? "");
  });
}

/** The CLI on a pseudo-terminal (script(1)): its stdin, stdout and stderr are a TTY; `output` is every byte the terminal got. */
export class TerminalCli {
  private readonly chunks: Buffer[] = [];
  readonly exited: Promise<number | null>;
  private readonly child: ChildProcess;

  constructor(args: string[], env: NodeJS.ProcessEnv) {
    const command = [process.execPath, CLI, ...args].map(shellQuote).join(" ");
    this.child = spawn("script", ["--quiet", "--return", "--command", command, "/dev/null"], { env, stdio: ["ignore", "pipe", "pipe"] });
    this.child.stdout!.on("data", (d: Buffer) => this.chunks.push(d));
    this.child.stderr!.on("data", (d: Buffer) => this.chunks.push(d));
    this.exited = new Promise((r) => this.child.once("close", (code) => r(code)));
    terminals.add(this);
  }

  get output(): Buffer {
    return Buffer.concat(this.chunks);
  }

  async waitForOutput(text: string, timeoutMs = 30_000): Promise<void> {
    await waitFor(() => this.output.includes(text), timeoutMs, () => `${JSON.stringify(text)} on the terminal\n${this.output.toString()}`);
  }

  /** Its exit code, once it exits by itself within `timeoutMs`. */
  async exit(timeoutMs = 30_000): Promise<number | null> {
    const code = await Promise.race([this.exited, new Promise<"timeout">((r) => setTimeout(() => r("timeout"), timeoutMs))]);
    if (code === "timeout") throw new Error(`the CLI in a terminal did not exit within ${timeoutMs} ms\n${this.output.toString()}`);
    terminals.delete(this);
    return code;
  }

  kill(): void {
    this.child.kill("SIGKILL");
  }
}

const terminals = new Set<TerminalCli>();

export function lastJsonLine(stdout: string): unknown {
  const lines = stdout.trim().split("\n");
  return JSON.parse(lines[lines.length - 1] ?? "null");
}

/** A long-running CLI process (start/worker/serve) with its output captured. */
export class CliProcess {
  readonly child: ChildProcess;
  stdout = "";
  stderr = "";
  private readonly exited: Promise<number | null>;

  constructor(args: string[], env: NodeJS.ProcessEnv, cwd?: string) {
    // The IPC channel: a service spawned here stops when this process goes (a test run that dies leaves none).
    this.child = spawn(process.execPath, [CLI, ...args], { env, cwd, stdio: ["ignore", "pipe", "pipe", "ipc"] });
    this.child.channel?.unref();
    this.child.stdout!.on("data", (d: Buffer) => (this.stdout += d.toString()));
    this.child.stderr!.on("data", (d: Buffer) => (this.stderr += d.toString()));
    this.exited = new Promise((r) => this.child.once("exit", (code) => r(code)));
    running.add(this);
  }

  get pid(): number {
    return this.child.pid!;
  }

  async waitForOutput(pattern: RegExp, timeoutMs = 20_000): Promise<void> {
    await waitFor(
      () => pattern.test(this.stdout) || pattern.test(this.stderr),
      timeoutMs,
      () => `output ${pattern}\nstdout: ${this.stdout}\nstderr: ${this.stderr}`,
    );
  }

  async stop(signal: NodeJS.Signals = "SIGTERM", timeoutMs = 15_000): Promise<number | null> {
    if (this.child.exitCode === null && this.child.signalCode === null) this.child.kill(signal);
    const code = await Promise.race([this.exited, new Promise<"timeout">((r) => setTimeout(() => r("timeout"), timeoutMs))]);
    if (code === "timeout") {
      this.child.kill("SIGKILL");
      await this.exited;
      throw new Error(`process ${this.pid} did not exit within ${timeoutMs} ms of ${signal}\nstderr: ${this.stderr}`);
    }
    running.delete(this);
    return code;
  }

  waitExit(): Promise<number | null> {
    return this.exited;
  }
}

/** A run's child, by the pid its worker logged as it started it (a warm spare's argv names no run). */
export function loggedChildPid(worker: CliProcess, runId: string): number {
  for (const line of `${worker.stdout}\n${worker.stderr}`.split("\n")) {
    if (!line.includes('"child_pid"')) continue;
    const row = JSON.parse(line) as { job_id?: string; child_pid?: number };
    if (row.job_id === runId && typeof row.child_pid === "number") return row.child_pid;
  }
  throw new Error(`the worker logged no child for ${runId}\nstdout: ${worker.stdout}\nstderr: ${worker.stderr}`);
}

const running = new Set<CliProcess>();

/** afterEach: no process of ours outlives its test. */
export async function stopAllCli(): Promise<void> {
  for (const t of [...terminals]) {
    t.kill();
    await t.exited;
    terminals.delete(t);
  }
  for (const p of [...running]) {
    try {
      p.child.kill("SIGKILL");
      await p.waitExit();
    } catch {
      // already gone
    }
    running.delete(p);
  }
}

export async function waitFor(check: () => boolean | Promise<boolean>, timeoutMs: number, what: () => string = () => "condition"): Promise<void> {
  const deadline = Date.now() + timeoutMs;
  while (Date.now() < deadline) {
    if (await check()) return;
    await new Promise((r) => setTimeout(r, 50));
  }
  throw new Error(`timed out after ${timeoutMs} ms waiting for ${what()}`);
}
