// Run the compiled CLI as a real process (tests build first: `pretest`), and stop every process we start.
import { spawn, type ChildProcess } from "node:child_process";
import { resolve } from "node:path";

export const CLI = resolve(import.meta.dirname, "../../dist/src/cli/main.js");

export interface CliResult {
  code: number | null;
  stdout: string;
  stderr: string;
}

/** Env for a CLI child: only what the test gives plus PATH/HOME, so the developer's env cannot leak in. */
export function cliEnv(extra: Record<string, string | undefined>): NodeJS.ProcessEnv {
  const env: NodeJS.ProcessEnv = { PATH: process.env.PATH, HOME: process.env.HOME, LOG_LEVEL: "warn" };
  for (const [k, v] of Object.entries(extra)) if (v !== undefined) env[k] = v;
  return env;
}

export function runCli(args: string[], env: NodeJS.ProcessEnv, opts: { input?: string; cwd?: string; timeoutMs?: number } = {}): Promise<CliResult> {
  return new Promise((resolvePromise, reject) => {
    const child = spawn(process.execPath, [CLI, ...args], { env, cwd: opts.cwd, stdio: ["pipe", "pipe", "pipe"] });
    let stdout = "";
    let stderr = "";
    child.stdout.on("data", (d: Buffer) => (stdout += d.toString()));
    child.stderr.on("data", (d: Buffer) => (stderr += d.toString()));
    const timer = setTimeout(() => {
      child.kill("SIGKILL");
      reject(new Error(`CLI ${args.join(" ")} timed out\nstdout: ${stdout}\nstderr: ${stderr}`));
    }, opts.timeoutMs ?? 30_000);
    child.on("error", reject);
    child.on("close", (code) => {
      clearTimeout(timer);
      resolvePromise({ code, stdout, stderr });
    });
    child.stdin.end(opts.input ?? "");
  });
}

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
    this.child = spawn(process.execPath, [CLI, ...args], { env, cwd, stdio: ["ignore", "pipe", "pipe"] });
    this.child.stdout!.on("data", (d: Buffer) => (this.stdout += d.toString()));
    this.child.stderr!.on("data", (d: Buffer) => (this.stderr += d.toString()));
    this.exited = new Promise((r) => this.child.once("exit", (code) => r(code)));
    running.add(this);
  }

  get pid(): number {
    return this.child.pid!;
  }

  async waitForOutput(pattern: RegExp, timeoutMs = 20_000): Promise<void> {
    await waitFor(() => pattern.test(this.stdout) || pattern.test(this.stderr), timeoutMs, () => `output ${pattern}\nstdout: ${this.stdout}\nstderr: ${this.stderr}`);
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

const running = new Set<CliProcess>();

/** afterEach: no process of ours outlives its test. */
export async function stopAllCli(): Promise<void> {
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
