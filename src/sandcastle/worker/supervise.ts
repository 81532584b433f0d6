// One child process under supervision: its own process group, stdout+stderr merged and split into
// bounded lines, a timeout and stop requests that end the whole group (SIGTERM → grace → SIGKILL),
// and a stdin pipe held open so the child can tell when its worker died.
import { execa } from "execa";
import type { Readable } from "node:stream";
import { LineSplitter } from "../line-splitter.js";
import { groupAlive, terminateTree } from "./process-tree.js";
import type { StopReason, StopRequest } from "./run-control.js";
import { KILL_GRACE_MS } from "../contract.js";

/** After the child exits, a grandchild may still hold its stdout open: stop reading after this. */
const OUTPUT_CLOSE_TIMEOUT_MS = 2000;

export interface SuperviseOptions {
  readonly command: string;
  readonly args: readonly string[];
  readonly cwd: string;
  readonly env: Readonly<Record<string, string>>;
  readonly timeoutMs: number;
  readonly signal: AbortSignal;
  readonly onLine: (line: string) => void;
  /** Whole lines that arrived in one chunk, as UTF-8 bytes joined by "\n" (see LineSplitter). */
  readonly onBlock?: (lines: Buffer) => void;
  /** Called after each chunk; a promise pauses reading until it settles (backpressure). */
  readonly backpressure?: () => Promise<void> | null;
  readonly onSpawn?: (pid: number) => void;
  readonly graceMs?: number;
  /** A child started ahead of its run (a spare, already handed the run): supervised from here instead of a new one. */
  readonly started?: StartedChild;
}

export interface SupervisedExit {
  readonly pid: number | null;
  readonly exitCode: number | null;
  readonly exitSignal: string | null;
  readonly stoppedFor: StopRequest | null;
  /** Set when the process could not be started at all. */
  readonly spawnError: string | null;
}

/** How a run's child is started, by supervise() or ahead of its run (child-spare.ts): its own group, nothing inherited. */
export function startChild(command: string, args: readonly string[], cwd: string, env: Readonly<Record<string, string>>) {
  return execa(command, [...args], {
    cwd,
    env: { ...env },
    extendEnv: false,
    detached: true,
    cleanup: false,
    stdin: "pipe",
    stdout: "pipe",
    stderr: "pipe",
    all: true,
    buffer: false,
    reject: false,
    encoding: "buffer",
  });
}
export type StartedChild = ReturnType<typeof startChild>;

export async function supervise(opts: SuperviseOptions): Promise<SupervisedExit> {
  const graceMs = opts.graceMs ?? KILL_GRACE_MS;
  const sub = opts.started ?? startChild(opts.command, opts.args, opts.cwd, opts.env);
  const settled = sub.then(
    (r) => r,
    (e: unknown) => e as { message?: string },
  );
  const pid = sub.pid ?? null;
  if (pid === null) {
    const r = (await settled) as { shortMessage?: string; message?: string; code?: string };
    return { pid: null, exitCode: null, exitSignal: null, stoppedFor: null, spawnError: r.shortMessage ?? r.message ?? "spawn failed" };
  }
  opts.onSpawn?.(pid);

  let stoppedFor: StopRequest | null = null;
  let stopping: Promise<unknown> | null = null;
  const stop = (request: StopRequest) => {
    if (stoppedFor !== null) return;
    stoppedFor = request;
    stopping = terminateTree(pid, graceMs);
  };
  const onAbort = () => stop((opts.signal.reason as StopRequest | undefined) ?? { reason: "cancelled" satisfies StopReason });
  if (opts.signal.aborted) onAbort();
  else opts.signal.addEventListener("abort", onAbort, { once: true });
  const timer = setTimeout(() => stop({ reason: "timeout" }), opts.timeoutMs);

  const exited = new Promise<{ code: number | null; signal: string | null }>((resolve) => {
    sub.nodeChildProcess.once("exit", (code, signal) => resolve({ code, signal }));
  });

  const output = sub.all as Readable;
  const outputDone = readLines(output, new LineSplitter(opts.onLine, undefined, opts.onBlock), opts.backpressure);

  const { code, signal } = await exited;
  clearTimeout(timer);
  opts.signal.removeEventListener("abort", onAbort);
  const closed = await Promise.race([outputDone.then(() => true), sleep(OUTPUT_CLOSE_TIMEOUT_MS).then(() => false)]);
  if (!closed) output.destroy();
  // Whatever the child left in its group (an agent's `sleep 999 &`) must not outlive the run.
  if (groupAlive(pid)) await terminateTree(pid, graceMs);
  if (stopping) await stopping;
  sub.stdin?.destroy();
  await settled;
  return { pid, exitCode: code, exitSignal: signal, stoppedFor, spawnError: null };
}

function readLines(stream: Readable, splitter: LineSplitter, backpressure?: () => Promise<void> | null): Promise<void> {
  return new Promise<void>((resolve) => {
    const finish = () => {
      splitter.end();
      resolve();
    };
    stream.on("data", (chunk: Buffer) => {
      splitter.push(chunk);
      const wait = backpressure?.();
      if (wait) {
        stream.pause();
        void wait.then(() => stream.resume());
      }
    });
    stream.once("end", finish);
    stream.once("close", finish);
    stream.once("error", finish);
  });
}

const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));
