// Our docker/podman sandbox provider, on Sandcastle's bind-mount provider API. One implementation for
// both CLIs: the binary is the only difference (container-args.ts holds the argv, engine-tested).
//
// Per agent phase, create() starts one container named after the run (`<run_id>`, then `<run_id>-2`, …),
// labelled with the run id and the deployment, running `sleep infinity` under --init; every exec runs
// beside it with `<cli> exec … sh -c '. <secret env file> …; <command>'`. The container sees only the
// run's worktree and git dir (read-write, where Sandcastle mounts them), the prompt template dir
// (read-only, at its host path), its secret env file (read-only) and a tmpfs home.
// Secrets: the env Sandcastle hands create() (the agent's env) goes into a 0400 file in the run's 0700
// directory, never onto an argv or into the container's config (ADR 0008).
// close() removes the container and its file; dispose() does the same synchronously for whatever a
// stopping child still has open; the worker removes by label whatever a killed child left (run-containers.ts).
import { execFileSync, spawn } from "node:child_process";
import { createReadStream, createWriteStream, rmSync } from "node:fs";
import { mkdir, rm } from "node:fs/promises";
import { constants } from "node:os";
import { dirname } from "node:path";
import { createInterface } from "node:readline";
import { pipeline } from "node:stream/promises";
import { createBindMountSandboxProvider, type BindMountCreateOptions, type BindMountSandboxHandle, type BindMountSandboxProvider, type ExecResult } from "@ai-hero/sandcastle";
import type { ContainerLimits } from "../contract.js";
import { firstLine, runContainerCli, type ContainerCli } from "../container-cli.js";
import { copyInArgs, copyOutArgs, execArgs, removeArgs, runArgs, runLabels, SANDBOX_HOME, SECRET_ENV_PATH, type BindMount, type ContainerUser } from "../container-args.js";
import { handBack } from "./container-user.js";
import { removeEnvFile, writeEnvFile } from "./env-file.js";
import { messageOf } from "./run-failure.js";

/** Sandcastle's own default: where the worktree appears when its mounts do not say. */
const DEFAULT_WORKTREE_PATH = `${SANDBOX_HOME}/workspace`;
/** Chars of stdout/stderr an exec keeps for its result when lines stream out (the live lines are not bounded). */
const TAIL_CHARS = 64 * 1024;
/** A buffered exec (git plumbing) that prints more than this is cut: its result is not a log. */
const BUFFER_CHARS = 16 * 1024 * 1024;
const START_TIMEOUT_MS = 120_000;

export interface ContainerSandboxOptions {
  readonly cli: ContainerCli;
  readonly runId: string;
  /** The run's 0700 directory: the secret env files go there. */
  readonly runDir: string;
  readonly image: string;
  readonly user: ContainerUser;
  readonly limits: ContainerLimits;
  readonly network: "default" | "none";
  readonly deployment: string;
  readonly templateDir: string;
}

/** The last `max` characters written to it. */
class TextTail {
  private parts: string[] = [];
  private length = 0;

  constructor(private readonly max: number) {}

  push(text: string): void {
    this.parts.push(text);
    this.length += text.length;
    while (this.length > this.max && this.parts.length > 1) this.length -= this.parts.shift()!.length;
  }

  toString(): string {
    const all = this.parts.join("");
    return all.length > this.max ? all.slice(all.length - this.max) : all;
  }
}

export class ContainerSandbox {
  private seq = 0;
  /** Open containers → their secret env file. */
  private readonly live = new Map<string, string>();

  constructor(private readonly opts: ContainerSandboxOptions) {}

  get rootless(): boolean {
    return this.opts.cli.engine === "podman" && process.getuid?.() !== 0;
  }

  provider(): BindMountSandboxProvider {
    return createBindMountSandboxProvider({
      name: this.opts.cli.engine,
      sandboxHomedir: SANDBOX_HOME,
      create: (options) => this.create(options),
    });
  }

  /** For exit paths: removes every container still open, and its env file. Bounded, never throws. */
  disposeSync(): void {
    const names = [...this.live.keys()];
    if (names.length > 0) {
      try {
        execFileSync(this.opts.cli.path, removeArgs(this.opts.cli.engine, names), { env: { ...this.opts.cli.env }, stdio: "ignore", timeout: 10_000 });
      } catch {
        // best effort: the worker removes the run's containers by label after the child ends
      }
    }
    for (const file of this.live.values()) rmSync(file, { force: true });
    this.live.clear();
  }

  private async create(options: BindMountCreateOptions): Promise<BindMountSandboxHandle> {
    const { cli } = this.opts;
    this.seq += 1;
    const name = this.seq === 1 ? this.opts.runId : `${this.opts.runId}-${this.seq}`;
    const worktreePath = options.mounts.find((m) => m.hostPath === options.worktreePath)?.sandboxPath ?? DEFAULT_WORKTREE_PATH;
    await handBack(
      options.mounts.map((m) => m.hostPath),
      this.opts.user,
    );
    const envFile = await writeEnvFile(this.opts.runDir, `${name}.env`, { ...options.env, HOME: SANDBOX_HOME }, this.opts.user);
    this.live.set(name, envFile);
    const mounts: BindMount[] = [
      ...options.mounts.map((m) => ({ hostPath: m.hostPath, sandboxPath: m.sandboxPath, readonly: m.readonly === true })),
      ...(options.mounts.some((m) => m.hostPath === this.opts.templateDir) ? [] : [{ hostPath: this.opts.templateDir, sandboxPath: this.opts.templateDir, readonly: true }]),
      { hostPath: envFile, sandboxPath: SECRET_ENV_PATH, readonly: true },
    ];
    let args: string[];
    try {
      args = runArgs({
        engine: cli.engine,
        name,
        image: this.opts.image,
        labels: runLabels(this.opts.runId, this.opts.deployment),
        user: this.opts.user,
        limits: this.opts.limits,
        network: this.opts.network,
        rootless: this.rootless,
        mounts,
        workdir: worktreePath,
        command: ["sleep", "infinity"],
      });
    } catch (error) {
      await this.forget(name);
      throw error;
    }
    const started = await runContainerCli(cli, args, START_TIMEOUT_MS);
    if (started.code !== 0) {
      // A half-made container (name taken, mount refused) must not outlive the failure.
      await runContainerCli(cli, removeArgs(cli.engine, [name]), 30_000);
      await this.forget(name);
      throw new Error(`${cli.engine} run failed: ${firstLine(started.stderr) || `exit ${started.code}`}`);
    }
    return {
      worktreePath,
      exec: (command, execOpts) => this.exec(name, command, execOpts),
      copyFileIn: (hostPath, sandboxPath) => this.copy(copyInArgs(name, sandboxPath), { from: hostPath }),
      copyFileOut: async (sandboxPath, hostPath) => {
        await mkdir(dirname(hostPath), { recursive: true });
        await this.copy(copyOutArgs(name, sandboxPath), { to: hostPath });
      },
      close: async () => {
        const rm = await runContainerCli(cli, removeArgs(cli.engine, [name]), 60_000);
        await this.forget(name);
        if (rm.code !== 0 && !/no such container|no container with name or id/i.test(rm.stderr)) {
          throw new Error(`${cli.engine} rm ${name} failed: ${firstLine(rm.stderr)}`);
        }
      },
    };
  }

  private async forget(name: string): Promise<void> {
    const file = this.live.get(name);
    this.live.delete(name);
    if (file !== undefined) await removeEnvFile(file);
  }

  /** One file through an exec's stdin or stdout, streamed (binary-safe, any size). */
  private copy(args: string[], file: { from: string } | { to: string }): Promise<void> {
    const cli = this.opts.cli;
    return new Promise((resolve, reject) => {
      const proc = spawn(cli.path, args, { env: { ...cli.env }, stdio: ["from" in file ? "pipe" : "ignore", "to" in file ? "pipe" : "ignore", "pipe"] });
      const stderr = new TextTail(4096);
      proc.stderr!.setEncoding("utf8").on("data", (chunk: string) => stderr.push(chunk));
      const streamed =
        "from" in file ? pipeline(createReadStream(file.from), proc.stdin!) : pipeline(proc.stdout!, createWriteStream(file.to, { mode: 0o600 }));
      const exited = new Promise<number | null>((r) => proc.once("close", (code) => r(code)));
      proc.once("error", (error) => reject(new Error(`${cli.engine} exec failed: ${error.message}`)));
      void Promise.allSettled([streamed, exited]).then(async ([s, e]) => {
        const code = e.status === "fulfilled" ? e.value : null;
        if (code === 0 && s.status === "fulfilled") return resolve();
        if ("to" in file) await rm(file.to, { force: true });
        const why = firstLine(stderr.toString()) || (s.status === "rejected" ? messageOf(s.reason) : `exit ${code}`);
        reject(new Error(`copying ${"from" in file ? `${file.from} into` : "out of"} the container failed: ${why}`));
      });
    });
  }

  private exec(name: string, command: string, opts: { onLine?: (line: string) => void; cwd?: string; sudo?: boolean; stdin?: string } = {}): Promise<ExecResult> {
    if (opts.sudo) {
      // no-new-privileges: sudo cannot work here, and a hook asking for it should say so plainly.
      return Promise.resolve({ stdout: "", stderr: "sudo is not available in a sandcastle-queue container (no-new-privileges)\n", exitCode: 1 });
    }
    const cli = this.opts.cli;
    const args = execArgs(name, command, { ...(opts.cwd !== undefined ? { cwd: opts.cwd } : {}), stdin: opts.stdin !== undefined });
    return new Promise((resolve, reject) => {
      const proc = spawn(cli.path, args, { env: { ...cli.env }, stdio: [opts.stdin !== undefined ? "pipe" : "ignore", "pipe", "pipe"] });
      if (opts.stdin !== undefined && proc.stdin) {
        // An agent that exits without reading its prompt closes the pipe: not an error of ours.
        proc.stdin.on("error", () => {});
        proc.stdin.end(opts.stdin);
      }
      const stdout = new TextTail(opts.onLine ? TAIL_CHARS : BUFFER_CHARS);
      const stderr = new TextTail(opts.onLine ? TAIL_CHARS : BUFFER_CHARS);
      proc.stderr!.setEncoding("utf8").on("data", (chunk: string) => stderr.push(chunk));
      let outputDone: Promise<void>;
      if (opts.onLine) {
        const onLine = opts.onLine;
        const lines = createInterface({ input: proc.stdout!, crlfDelay: Infinity });
        lines.on("line", (line) => {
          stdout.push(`${line}\n`);
          onLine(line);
        });
        outputDone = new Promise((r) => lines.once("close", () => r()));
      } else {
        proc.stdout!.setEncoding("utf8").on("data", (chunk: string) => stdout.push(chunk));
        outputDone = new Promise((r) => proc.stdout!.once("close", () => r()));
      }
      proc.once("error", (error) => reject(new Error(`${cli.engine} exec failed: ${error.message}`)));
      proc.once("close", (code, signal) => {
        void outputDone.then(() =>
          resolve({ stdout: opts.onLine ? stdout.toString().replace(/\n$/, "") : stdout.toString(), stderr: stderr.toString(), exitCode: code ?? (signal !== null ? 128 + (constants.signals[signal] ?? 0) : 1) }),
        );
      });
    });
  }
}
