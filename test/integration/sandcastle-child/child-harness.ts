// Runs the COMPILED child program (`npm run build` first) the way the worker does: detached (its
// own process group), cwd = repo_workdir, env = exactly PATH, HOME, NODE_NO_WARNINGS=1, a pipe on
// stdin, the config as a 0600 file. Every process and temp dir it creates is tracked for cleanup.
import { execFileSync, spawn, type ChildProcess } from "node:child_process";
import { existsSync, mkdirSync, mkdtempSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { dirname, join, resolve } from "node:path";
import { fileURLToPath } from "node:url";
import type { ChildConfig, SandcastleRunRequestInput } from "../../../src/sandcastle/contract.js";

const ROOT = resolve(dirname(fileURLToPath(import.meta.url)), "../../..");
export const CHILD = join(ROOT, "dist/src/sandcastle/child/main.js");
export const FIXTURES = join(ROOT, "test/fixtures/sandcastle");

export function requireBuiltChild(): void {
  if (!existsSync(CHILD)) throw new Error(`${CHILD} is missing: run \`npm run build\` before these tests`);
}

const tempDirs: string[] = [];
const children: ChildProcess[] = [];
const extraPids: number[] = [];

export function tempDir(prefix: string): string {
  const dir = mkdtempSync(join(tmpdir(), `scq-child-test-${prefix}-`));
  tempDirs.push(dir);
  return dir;
}

/** A process a test learned about (an agent's pid): killed in cleanup if still there. */
export function trackPid(pid: number): void {
  extraPids.push(pid);
}

export function git(repo: string, ...args: string[]): string {
  return execFileSync("git", args, { cwd: repo, encoding: "utf8", stdio: ["ignore", "pipe", "pipe"] }).trim();
}

/** A fresh repo with one commit and a local identity (the agent commits with it). */
export function makeRepo(): string {
  const repo = join(tempDir("repo"), "repo");
  mkdirSync(repo);
  git(repo, "init", "-q", "-b", "main");
  git(repo, "config", "user.name", "Child Test");
  git(repo, "config", "user.email", "child-test@example.invalid");
  writeFileSync(join(repo, "README.md"), "test repo\n");
  git(repo, "add", ".");
  git(repo, "commit", "-q", "-m", "initial");
  return repo;
}

/** A HOME with its own .gitconfig, so the test can see whether a run wrote to it. */
export function makeHome(): string {
  const home = tempDir("home");
  writeFileSync(join(home, ".gitconfig"), "[core]\n\tpager = cat\n");
  return home;
}

export interface ConfigInput {
  runId?: string;
  request: Partial<SandcastleRunRequestInput> & Record<string, unknown>;
  env?: Record<string, string>;
  /** Replaces the whole file content (for bad-config tests). */
  raw?: string;
}

export function writeConfig(input: ConfigInput): string {
  const dir = tempDir("config");
  const path = join(dir, "sandcastle-run.json");
  const config: Omit<ChildConfig, "request"> & { request: unknown } = {
    version: 1,
    run_id: input.runId ?? `run-${Math.random().toString(36).slice(2, 10)}`,
    request: { session_id: "sess-1", env_manifest_name: "test", ...input.request },
    env: input.env ?? {},
  };
  writeFileSync(path, input.raw ?? JSON.stringify(config), { mode: 0o600 });
  return path;
}

export interface RunningChild {
  readonly proc: ChildProcess;
  readonly pid: number;
  readonly lines: string[];
  readonly stderr: string[];
  /** Resolves when the process has exited and its output is drained. */
  readonly done: Promise<{ code: number | null; signal: NodeJS.Signals | null }>;
}

export function startChild(configPath: string, opts: { cwd: string; home: string }): RunningChild {
  const proc = spawn(process.execPath, [CHILD, "run", "--config", configPath, "--json"], {
    cwd: opts.cwd,
    env: { PATH: process.env.PATH ?? "/usr/bin:/bin", HOME: opts.home, NODE_NO_WARNINGS: "1" },
    stdio: ["pipe", "pipe", "pipe"],
    detached: true,
  });
  children.push(proc);
  const lines: string[] = [];
  const stderr: string[] = [];
  let buffered = "";
  proc.stdout!.setEncoding("utf8").on("data", (chunk: string) => {
    buffered += chunk;
    const parts = buffered.split("\n");
    buffered = parts.pop()!;
    lines.push(...parts);
  });
  proc.stderr!.setEncoding("utf8").on("data", (chunk: string) => stderr.push(chunk));
  const done = new Promise<{ code: number | null; signal: NodeJS.Signals | null }>((resolveDone) => {
    proc.on("close", (code, signal) => {
      if (buffered.length > 0) lines.push(buffered);
      resolveDone({ code, signal });
    });
  });
  return { proc, pid: proc.pid!, lines, stderr, done };
}

export interface FinishedChild {
  readonly code: number | null;
  readonly signal: NodeJS.Signals | null;
  readonly lines: string[];
  /** The records (lines that start with RS), parsed. */
  readonly events: Array<Record<string, unknown>>;
  /** Every other line: what the agent printed. */
  readonly agentLines: string[];
  readonly last: { type: string; result: Record<string, unknown> & { commits: { sha: string }[] } };
  readonly stdout: string;
  readonly stderr: string;
}

export function parseLines(lines: string[]): Array<Record<string, unknown>> {
  return lines.filter((l) => l.startsWith("\u001e")).map((l) => JSON.parse(l.slice(1)) as Record<string, unknown>);
}

export async function finish(child: RunningChild): Promise<FinishedChild> {
  const { code, signal } = await child.done;
  const events = parseLines(child.lines);
  return {
    code,
    signal,
    lines: child.lines,
    events,
    agentLines: child.lines.filter((l) => !l.startsWith("\u001e")),
    last: events.at(-1) as FinishedChild["last"],
    stdout: child.lines.join("\n"),
    stderr: child.stderr.join(""),
  };
}

/** Runs to the end. stdin stays open meanwhile, as the worker keeps it: closing it means "worker died". */
export async function runChild(configPath: string, opts: { cwd: string; home: string }): Promise<FinishedChild> {
  return finish(startChild(configPath, opts));
}

export async function waitFor<T>(probe: () => T | undefined | false, timeoutMs: number, what: string): Promise<T> {
  const deadline = Date.now() + timeoutMs;
  for (;;) {
    const value = probe();
    if (value !== undefined && value !== false) return value;
    if (Date.now() > deadline) throw new Error(`timed out after ${timeoutMs} ms waiting for ${what}`);
    await new Promise((r) => setTimeout(r, 50));
  }
}

export function alive(pid: number): boolean {
  try {
    process.kill(pid, 0);
  } catch {
    return false;
  }
  // A zombie still answers kill(0); it is gone for our purposes.
  try {
    const stat = execFileSync("ps", ["-o", "stat=", "-p", String(pid)], { encoding: "utf8" }).trim();
    return stat.length > 0 && !stat.startsWith("Z");
  } catch {
    return false;
  }
}

/** pids whose full command line matches `pattern` (pgrep -f). */
export function pgrep(pattern: string): number[] {
  try {
    return execFileSync("pgrep", ["-f", pattern], { encoding: "utf8" })
      .split("\n")
      .filter((s) => s.trim().length > 0)
      .map(Number)
      .filter((pid) => pid !== process.pid);
  } catch {
    return [];
  }
}

export function cleanup(): void {
  for (const child of children.splice(0)) {
    if (child.pid !== undefined && child.exitCode === null && child.signalCode === null) {
      try {
        process.kill(-child.pid, "SIGKILL"); // its group (it was spawned detached)
      } catch {
        try {
          process.kill(child.pid, "SIGKILL");
        } catch {
          // gone
        }
      }
    }
  }
  for (const pid of extraPids.splice(0)) {
    try {
      process.kill(pid, "SIGKILL");
    } catch {
      // gone
    }
  }
  for (const dir of tempDirs.splice(0)) rmSync(dir, { recursive: true, force: true });
}
