// The host's end of a run container's exec channel (ADR 0049). The child listens on a unix socket in the run's own
// directory (host-owned, 0700), made the container user's and mounted into the container; the container's main
// process (container-main/exec-server.mts) connects to it as it starts, before any agent code can run (that only
// ever runs through our execs). The first connection is taken, then the listener is closed and its file removed:
// nothing else — the agent included — can be the server or a second client. The host only ever listens: it never
// connects to a path the container could write. Execs share the one connection (container-main/exec-frames.mts).
// Once the channel is gone — it never connected, the server went away or stopped answering — it takes no more execs
// and says so once: the caller runs the rest with `<cli> exec`.
import { rmSync } from "node:fs";
import { chmod, chown, rm } from "node:fs/promises";
import { createServer, type Server, type Socket } from "node:net";
import { PassThrough, Writable } from "node:stream";
import { z } from "zod";
import { commandArgv, type ContainerCommand, type ContainerUser } from "../containers/container-args.js";
import { dataFrames, encodeFrame, FRAME, FrameDecoder, jsonFrame, type Frame } from "../container-main/exec-frames.mjs";
import type { ExecExit, ExecProcess } from "./container-exec.js";

/** The server's answers, checked: it runs as the agent's user. */
const Started = z.union([z.object({ pid: z.number().int().positive() }), z.object({ error: z.string() })]);
type Started = z.infer<typeof Started>;
const Exited = z.object({ code: z.number().int().nullable(), signal: z.string().nullable() });

/** Output held for a slow reader before the channel stops reading: a bundle waits for the disk, not the child's memory. */
const OUTPUT_HIGH_WATER = 1024 * 1024;
/** A kill the server does not confirm (its exit frame) within this is taken as done, and the channel as gone. */
const KILL_CONFIRM_MS = 5000;
/** `podman exec` answers 127 when it cannot start a command (no such cwd): so does the channel. */
const NOT_STARTED_CODE = 127;

export interface ExecChannelOptions {
  /** The container's user: the socket is made its own, 0600. */
  readonly owner: ContainerUser;
  /** How long a new exec waits for the server's answer while nothing at all comes from it; then the channel is gone. */
  readonly answerMs: number;
  /** Once, when the channel stops taking execs for any reason but ours (close, an expected end): why, in a few words. */
  readonly onGone: (why: string) => void;
}

interface ChannelExec {
  readonly stdout: PassThrough;
  readonly stderr: PassThrough;
  /** Until the server answers the open. */
  answer?: (started: Started | undefined) => void;
  watch?: NodeJS.Timeout;
  /** Settled by the exit frame, which may come in the same read as the answer. */
  readonly exited: Promise<ExecExit>;
  readonly settle: { resolve: (exit: ExecExit) => void; reject: (error: Error) => void };
}

export class ExecChannel {
  private socket: Socket | undefined;
  private listener: Server | undefined;
  private state: "listening" | "open" | "gone" = "listening";
  /** The container's end is ours (it is being removed): its channel closing is not news. */
  private ending = false;
  private nextId = 1;
  private readonly execs = new Map<number, ChannelExec>();
  private readonly decoder = new FrameDecoder();
  /** Waiting for the server's `ended` (end()). */
  private onEnded: (() => void) | undefined;
  private lastHeard = Date.now();
  /** Outputs whose reader is behind: the socket is paused while there are any. */
  private blocked = 0;
  /** Writers waiting for the socket to drain (or close). */
  private readonly drainWaiters = new Set<() => void>();
  private connectedResolve!: (connected: boolean) => void;
  private readonly connection = new Promise<boolean>((resolve) => (this.connectedResolve = resolve));

  private constructor(
    readonly path: string,
    private readonly opts: ExecChannelOptions,
  ) {}

  /** Listens on `path` (a stale file there is replaced), made `owner`'s. */
  static async listen(path: string, opts: ExecChannelOptions): Promise<ExecChannel> {
    const channel = new ExecChannel(path, opts);
    await rm(path, { force: true });
    const listener = createServer((socket) => channel.accept(socket));
    listener.maxConnections = 1;
    channel.listener = listener;
    await new Promise<void>((resolve, reject) => {
      listener.once("error", reject);
      listener.listen(path, () => resolve());
    });
    if (process.getuid?.() === 0) await chown(path, opts.owner.uid, opts.owner.gid);
    await chmod(path, 0o600);
    return channel;
  }

  /** Whether the server has connected, waiting at most `waitMs` for it. */
  async waitConnected(waitMs: number): Promise<boolean> {
    let timer: NodeJS.Timeout | undefined;
    const timeout = new Promise<boolean>((resolve) => (timer = setTimeout(() => resolve(false), Math.max(0, waitMs))));
    try {
      return await Promise.race([this.connection, timeout]);
    } finally {
      clearTimeout(timer);
    }
  }

  /** The server is not coming: the listener goes (none ever will connect) and the channel is gone, for `why`. */
  abandon(why: string): void {
    if (this.state !== "listening") return;
    this.stopListening();
    this.gone(why);
    this.connectedResolve(false);
  }

  /** Starts `command`; undefined when the channel takes no execs, or the server did not answer (the channel is gone then). */
  async start(command: ContainerCommand): Promise<ExecProcess | undefined> {
    const socket = this.socket;
    if (this.state !== "open" || socket === undefined) return undefined;
    const id = this.nextId++;
    let settle!: ChannelExec["settle"];
    const exited = new Promise<ExecExit>((resolve, reject) => (settle = { resolve, reject }));
    // A channel lost mid-exec rejects: whoever awaits it hears why, nobody else needs to.
    exited.catch(() => {});
    const exec: ChannelExec = { stdout: this.output(), stderr: this.output(), exited, settle };
    this.execs.set(id, exec);
    const sentAt = Date.now();
    const started = await new Promise<Started | undefined>((resolve) => {
      exec.answer = resolve;
      const watch = (): void => {
        if (exec.answer === undefined) return;
        const silentMs = Date.now() - Math.max(this.lastHeard, sentAt);
        if (this.blocked > 0 || silentMs < this.opts.answerMs) {
          exec.watch = setTimeout(watch, Math.max(100, this.opts.answerMs - silentMs));
          return;
        }
        exec.answer = undefined;
        this.execs.delete(id);
        // Should a stopped server ever read it, the open is killed as soon as it is made.
        this.send(encodeFrame(FRAME.kill, id));
        this.gone(`did not answer for ${this.opts.answerMs / 1000} s`);
        resolve(undefined);
      };
      exec.watch = setTimeout(watch, this.opts.answerMs);
      this.send(jsonFrame(FRAME.open, id, { argv: commandArgv(command), ...(command.cwd !== undefined ? { cwd: command.cwd } : {}), stdin: command.stdin }));
    });
    if (started === undefined) return undefined;
    if ("error" in started) return notStarted(started.error, command.stdin);
    return {
      stdin: command.stdin ? this.stdin(id) : null,
      stdout: exec.stdout,
      stderr: exec.stderr,
      kill: () => {
        if (!this.execs.has(id)) return;
        this.send(encodeFrame(FRAME.kill, id));
        // A stopped server never confirms it: the caller's time limit must still hold.
        setTimeout(() => {
          if (this.execs.get(id) !== exec) return;
          this.execs.delete(id);
          this.gone(`did not confirm a kill for ${KILL_CONFIRM_MS / 1000} s`);
          this.endOutputs(exec);
          exec.settle.reject(new Error(`killed, but the exec server did not confirm it within ${KILL_CONFIRM_MS / 1000} s`));
        }, KILL_CONFIRM_MS).unref();
      },
      exited,
    };
  }

  /** The container now ends `seconds` from now (a warm container taken by its run: ADR 0053); false when the channel is not open. */
  setDeadline(seconds: number): boolean {
    if (this.state !== "open" || this.socket === undefined) return false;
    this.send(jsonFrame(FRAME.deadline, 0, { seconds: Math.max(1, Math.ceil(seconds)) }));
    return true;
  }

  /** Whether it takes execs: connected and not gone. */
  get open(): boolean {
    return this.state === "open";
  }

  /** The container is about to be removed by us: the channel closing with it is expected. */
  expectEnd(): void {
    this.ending = true;
  }

  /**
   * Ends the container through its server: every process in it but the server is SIGKILLed, then the server exits and
   * the container (`--rm`) goes by itself. True once the server said so within `waitMs`; false when it could not be
   * asked or did not answer (a stopped or gone server: the caller removes the container itself).
   */
  async end(waitMs: number): Promise<boolean> {
    const socket = this.socket;
    this.ending = true;
    if (this.state !== "open" || socket === undefined) return false;
    let timer: NodeJS.Timeout | undefined;
    const ended = await new Promise<boolean>((resolve) => {
      this.onEnded = () => resolve(true);
      socket.once("close", () => resolve(false));
      timer = setTimeout(() => resolve(false), waitMs);
      this.send(encodeFrame(FRAME.end, 0));
    });
    clearTimeout(timer);
    this.onEnded = undefined;
    this.close();
    return ended;
  }

  /** Synchronous (exit paths): no more execs; the server, if connected, kills what it runs for us and ends. */
  close(): void {
    this.ending = true;
    if (this.state === "listening") this.stopListening();
    this.state = "gone";
    this.connectedResolve(false);
    this.socket?.destroy();
  }

  private accept(socket: Socket): void {
    if (this.state !== "listening") {
      socket.destroy();
      return;
    }
    this.state = "open";
    this.socket = socket;
    this.stopListening();
    socket.on("data", (chunk: Buffer) => this.read(chunk));
    socket.on("drain", () => this.drained());
    socket.on("error", () => {});
    socket.on("close", () => this.lost());
    socket.write(encodeFrame(FRAME.hello, 0));
    this.lastHeard = Date.now();
    this.connectedResolve(true);
  }

  private stopListening(): void {
    this.listener?.close();
    this.listener = undefined;
    rmSync(this.path, { force: true });
  }

  private gone(why: string): void {
    const was = this.state;
    this.state = "gone";
    if (was !== "gone" && !this.ending) this.opts.onGone(why);
  }

  private lost(): void {
    this.gone("closed (its main process went away)");
    this.drained();
    for (const exec of this.execs.values()) {
      clearTimeout(exec.watch);
      if (exec.answer !== undefined) {
        exec.answer(undefined);
        exec.answer = undefined;
      }
      this.endOutputs(exec);
      exec.settle.reject(new Error("the exec channel into the container closed before the command ended (its main process is gone)"));
    }
    this.execs.clear();
  }

  private read(chunk: Buffer): void {
    this.lastHeard = Date.now();
    let frames: Frame[];
    try {
      frames = this.decoder.push(chunk);
    } catch {
      this.socket?.destroy();
      return;
    }
    for (const frame of frames) this.onFrame(frame);
  }

  private onFrame(frame: Frame): void {
    if (frame.type === FRAME.ended) {
      this.onEnded?.();
      return;
    }
    const exec = this.execs.get(frame.id);
    if (exec === undefined) return;
    switch (frame.type) {
      case FRAME.started: {
        clearTimeout(exec.watch);
        const started = Started.safeParse(parseJson(frame.payload));
        exec.answer?.(started.success ? started.data : { error: "the exec server's answer could not be read" });
        exec.answer = undefined;
        if (started.success && "error" in started.data) this.execs.delete(frame.id);
        return;
      }
      case FRAME.stdout:
        this.deliver(exec.stdout, frame.payload);
        return;
      case FRAME.stderr:
        this.deliver(exec.stderr, frame.payload);
        return;
      case FRAME.exit: {
        this.execs.delete(frame.id);
        this.endOutputs(exec);
        const exit = Exited.safeParse(parseJson(frame.payload));
        if (exit.success) exec.settle.resolve({ code: exit.data.code, signal: exit.data.signal as NodeJS.Signals | null });
        else exec.settle.reject(new Error("the exec server's exit record could not be read"));
        return;
      }
    }
  }

  private output(): PassThrough {
    const stream = new PassThrough({ highWaterMark: OUTPUT_HIGH_WATER });
    stream.on("error", () => {});
    return stream;
  }

  /** Into the exec's output; past its high-water mark the socket waits for that reader (or its end). */
  private deliver(stream: PassThrough, data: Buffer): void {
    if (stream.destroyed || stream.writableEnded) return;
    if (stream.write(data)) return;
    this.blocked += 1;
    if (this.blocked === 1) this.socket?.pause();
    const unblock = (): void => {
      stream.off("drain", unblock);
      stream.off("close", unblock);
      this.blocked -= 1;
      if (this.blocked === 0 && this.socket !== undefined && !this.socket.destroyed) this.socket.resume();
    };
    stream.on("drain", unblock);
    stream.on("close", unblock);
  }

  private endOutputs(exec: ChannelExec): void {
    for (const stream of [exec.stdout, exec.stderr]) if (!stream.destroyed && !stream.writableEnded) stream.end();
  }

  private send(frame: Buffer): boolean {
    const socket = this.socket;
    if (socket === undefined || socket.destroyed) return true;
    return socket.write(frame);
  }

  private drained(): void {
    const waiters = [...this.drainWaiters];
    this.drainWaiters.clear();
    for (const waiter of waiters) waiter();
  }

  /** The exec's stdin as a stream: frames as the socket takes them; its end, the stdin's end. */
  private stdin(id: number): Writable {
    return new Writable({
      write: (chunk: Buffer, _encoding, callback) => {
        if (!this.execs.has(id)) return callback();
        let flowing = true;
        for (const frame of dataFrames(FRAME.stdin, id, chunk)) flowing = this.send(frame);
        if (flowing) callback();
        else this.drainWaiters.add(() => callback());
      },
      final: (callback) => {
        if (this.execs.has(id)) this.send(encodeFrame(FRAME.stdinEnd, id));
        callback();
      },
    });
  }
}

function parseJson(payload: Buffer): unknown {
  try {
    return JSON.parse(payload.toString("utf8"));
  } catch {
    return undefined;
  }
}

/** A command the server could not start (its cwd is missing): exit 127 and why on stderr, as `podman exec` has it. */
function notStarted(why: string, stdin: boolean): ExecProcess {
  const stdout = new PassThrough();
  stdout.end();
  const stderr = new PassThrough();
  stderr.end(`${why}\n`);
  const sink = new Writable({ write: (_chunk, _encoding, callback) => callback() });
  return { stdin: stdin ? sink : null, stdout, stderr, kill: () => {}, exited: Promise.resolve({ code: NOT_STARTED_CODE, signal: null }) };
}
