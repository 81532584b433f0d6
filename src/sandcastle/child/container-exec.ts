// One command in a run container, whichever way it runs (ADR 0049): through the container's exec channel
// (exec-channel.ts), or `<cli> exec` once that channel is gone. Both give an ExecProcess; from it, Sandcastle's exec()
// gets its result (output streamed as lines, tails kept, a signal's death as 128+signal), and our file copies and the
// branch hand-off get a streamed one (stdin from a file or a text, stdout binary-safe into a 0600 file with a byte cap
// and a time limit).
import { spawn } from "node:child_process";
import { createReadStream, createWriteStream } from "node:fs";
import { rm } from "node:fs/promises";
import { constants } from "node:os";
import { createInterface } from "node:readline";
import type { Readable, Writable } from "node:stream";
import { pipeline } from "node:stream/promises";
import type { ExecResult } from "@ai-hero/sandcastle";
import { firstLine, type ContainerCli } from "../containers/container-cli.js";
import { messageOf } from "./run-failure.js";

/** Chars of stdout/stderr an exec keeps for its result when lines stream out (the live lines are not bounded). */
const TAIL_CHARS = 64 * 1024;
/** A buffered exec (git plumbing) that prints more than this is cut: its result is not a log. */
const BUFFER_CHARS = 16 * 1024 * 1024;

export interface ExecExit {
  readonly code: number | null;
  readonly signal: NodeJS.Signals | null;
}

export interface ExecProcess {
  /** null when the command is given no input. */
  readonly stdin: Writable | null;
  /** Both are read to their end by whoever runs the command: the channel waits for them. */
  readonly stdout: Readable;
  readonly stderr: Readable;
  /** SIGKILL: the command's process group in the container (the channel), or the CLI (`<cli> exec`). */
  kill(): void;
  /** Once its output has ended; rejects when it could not be run or was lost with the channel. */
  readonly exited: Promise<ExecExit>;
}

/** `<cli> exec …` as an ExecProcess. */
export function cliExec(cli: ContainerCli, args: readonly string[], stdin: boolean): ExecProcess {
  const proc = spawn(cli.path, [...args], { env: { ...cli.env }, stdio: [stdin ? "pipe" : "ignore", "pipe", "pipe"] });
  const exited = new Promise<ExecExit>((resolve, reject) => {
    proc.once("error", (error) => reject(new Error(`${cli.engine} exec failed: ${error.message}`)));
    proc.once("close", (code, signal) => resolve({ code, signal }));
  });
  return { stdin: proc.stdin, stdout: proc.stdout!, stderr: proc.stderr!, kill: () => proc.kill("SIGKILL"), exited };
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

/** What Sandcastle's exec() answers: `input` written whole, lines to `onLine` as they come, the exit code (128+signal). */
export async function execResult(proc: ExecProcess, opts: { onLine?: (line: string) => void; input?: string }): Promise<ExecResult> {
  if (opts.input !== undefined && proc.stdin !== null) {
    // An agent that exits without reading its prompt closes the pipe: not an error of ours.
    proc.stdin.on("error", () => {});
    proc.stdin.end(opts.input);
  }
  const stdout = new TextTail(opts.onLine ? TAIL_CHARS : BUFFER_CHARS);
  const stderr = new TextTail(opts.onLine ? TAIL_CHARS : BUFFER_CHARS);
  proc.stderr.setEncoding("utf8").on("data", (chunk: string) => stderr.push(chunk));
  let outputDone: Promise<void>;
  if (opts.onLine) {
    const onLine = opts.onLine;
    const lines = createInterface({ input: proc.stdout, crlfDelay: Infinity });
    lines.on("line", (line) => {
      stdout.push(`${line}\n`);
      onLine(line);
    });
    outputDone = new Promise((r) => lines.once("close", () => r()));
  } else {
    proc.stdout.setEncoding("utf8").on("data", (chunk: string) => stdout.push(chunk));
    outputDone = new Promise((r) => proc.stdout.once("close", () => r()));
  }
  const { code, signal } = await proc.exited;
  await outputDone;
  return { stdout: opts.onLine ? stdout.toString().replace(/\n$/, "") : stdout.toString(), stderr: stderr.toString(), exitCode: code ?? (signal !== null ? 128 + (constants.signals[signal] ?? 0) : 1) };
}

export interface StreamIo {
  /** Its stdin: a file's bytes, or a text. */
  readonly from?: string;
  readonly input?: string;
  /** Its stdout into this file (0600), at most `maxBytes` of it. */
  readonly to?: string;
  readonly maxBytes?: number;
  readonly timeoutMs?: number;
}

/**
 * A command with its stdin from a file or a text and its stdout into a file, streamed; resolves with its stderr's
 * tail once it exits 0. Killed past `timeoutMs` or `maxBytes`. A failed one leaves no output file.
 */
export async function streamExec(proc: ExecProcess, io: StreamIo): Promise<string> {
  const stderr = new TextTail(4096);
  proc.stderr.setEncoding("utf8").on("data", (chunk: string) => stderr.push(chunk));
  let over = false;
  const timer = io.timeoutMs !== undefined ? setTimeout(() => proc.kill(), io.timeoutMs) : undefined;
  const pieces: Promise<unknown>[] = [];
  if (io.from !== undefined) pieces.push(pipeline(createReadStream(io.from), proc.stdin!));
  else if (io.input !== undefined) {
    proc.stdin!.on("error", () => {});
    proc.stdin!.end(io.input);
  }
  if (io.to !== undefined) {
    let bytes = 0;
    const limit = io.maxBytes ?? Number.POSITIVE_INFINITY;
    proc.stdout.on("data", (chunk: Buffer) => {
      bytes += chunk.length;
      if (bytes > limit && !over) {
        over = true;
        proc.kill();
      }
    });
    pieces.push(pipeline(proc.stdout, createWriteStream(io.to, { mode: 0o600 })));
  } else {
    proc.stdout.resume();
  }
  const [written, exited] = await Promise.allSettled([Promise.all(pieces), proc.exited]);
  clearTimeout(timer);
  const code = exited.status === "fulfilled" ? exited.value.code : null;
  if (code === 0 && written.status === "fulfilled" && !over) return stderr.toString();
  if (io.to !== undefined) await rm(io.to, { force: true });
  const why = over
    ? `its output passed ${io.maxBytes} bytes`
    : exited.status === "rejected"
      ? messageOf(exited.reason)
      : firstLine(stderr.toString()) || (written.status === "rejected" ? messageOf(written.reason) : `exit ${code}`);
  throw new Error(why);
}
