// A lean Redis connection for the one hot write path: appending a child's log lines to a stream.
// A value can be handed over as many buffers, which go out in one writev without being joined first
// (ioredis copies every argument into one buffer per command, and a pipeline copies them again).
// Only what the session log needs is spoken: RESP2 commands in, simple replies out (no arrays).
// A lost connection fails the commands in flight; the next command connects again.
import { connect as netConnect, type Socket } from "node:net";
import { connect as tlsConnect } from "node:tls";
import { AppError } from "../errors.js";
import { describeTarget, type RedisTarget } from "./target.js";

/** One argument: text, bytes, or bytes in pieces sent back to back as one value. */
export type CommandArg = string | Buffer | readonly Buffer[];

type Reply = string | number | null;

interface Pending {
  resolve(reply: Reply): void;
  reject(err: Error): void;
}

const CRLF = Buffer.from("\r\n");
const DEFAULT_CONNECT_TIMEOUT_MS = 3000;

export class StreamAppender {
  private socket: Socket | null = null;
  private ready: Promise<Socket> | null = null;
  private readonly pending: Pending[] = [];
  private input: Buffer = Buffer.alloc(0);
  private closed = false;

  constructor(
    private readonly target: RedisTarget,
    private readonly connectTimeoutMs = DEFAULT_CONNECT_TIMEOUT_MS,
  ) {}

  /** XADD key MAXLEN ~ maxLen * field value: the stream entry's id. */
  async xadd(key: string, maxLen: number, field: string, value: CommandArg): Promise<string> {
    return String(await this.command(["XADD", key, "MAXLEN", "~", String(maxLen), "*", field, value]));
  }

  async expire(key: string, seconds: number): Promise<number> {
    return Number(await this.command(["EXPIRE", key, String(seconds)]));
  }

  /** Sends one command (pipelined behind any in flight) and resolves with its reply. */
  async command(args: readonly CommandArg[]): Promise<Reply> {
    if (this.closed) throw new AppError("redis_unavailable", "the session log connection is closed");
    const socket = await this.connection();
    return this.send(socket, args);
  }

  /** Ends the connection; commands in flight fail. */
  close(): void {
    this.closed = true;
    this.drop(new AppError("redis_unavailable", "the session log connection was closed"));
  }

  private send(socket: Socket, args: readonly CommandArg[]): Promise<Reply> {
    return new Promise<Reply>((resolve, reject) => {
      // Lost between connecting and sending: no reply would ever come for a write to it.
      if (socket !== this.socket || socket.destroyed) return reject(new AppError("redis_unavailable", "session log: lost the connection to Redis"));
      this.pending.push({ resolve, reject });
      socket.cork();
      socket.write(`*${args.length}\r\n`);
      for (const arg of args) {
        if (typeof arg === "string") socket.write(`$${Buffer.byteLength(arg)}\r\n${arg}\r\n`);
        else if (Buffer.isBuffer(arg)) writeValue(socket, [arg]);
        else writeValue(socket, arg as readonly Buffer[]);
      }
      socket.uncork();
    });
  }

  private connection(): Promise<Socket> {
    this.ready ??= this.open().catch((err: Error) => {
      this.ready = null;
      throw err;
    });
    return this.ready;
  }

  private async open(): Promise<Socket> {
    const { socket, readyEvent, auth, db } = this.dial();
    this.socket = socket;
    this.input = Buffer.alloc(0);
    socket.on("data", (chunk: Buffer) => this.onData(chunk));
    socket.on("error", (err) => this.lost(socket, err));
    socket.on("close", () => this.lost(socket, new Error("connection closed")));
    try {
      await new Promise<void>((resolve, reject) => {
        const timer = setTimeout(() => reject(new Error(`no connection within ${this.connectTimeoutMs} ms`)), this.connectTimeoutMs);
        socket.once(readyEvent, () => {
          clearTimeout(timer);
          resolve();
        });
        socket.once("close", () => {
          clearTimeout(timer);
          reject(new Error("connection refused or closed"));
        });
      });
    } catch (err) {
      if (this.socket === socket) this.socket = null;
      socket.destroy();
      throw new AppError("redis_unavailable", `session log: cannot reach Redis at ${describeTarget(this.target)}: ${(err as Error).message}`);
    }
    try {
      if (auth) await this.send(socket, auth);
      if (db !== 0) await this.send(socket, ["SELECT", String(db)]);
    } catch (err) {
      // A refused AUTH or SELECT: this connection is no use, and the next command dials again.
      if (this.socket === socket) this.drop(err as Error);
      throw err;
    }
    return socket;
  }

  private dial(): { socket: Socket; readyEvent: "connect" | "secureConnect"; auth: string[] | null; db: number } {
    if (this.target.kind === "socket") return { socket: netConnect({ path: this.target.path }), readyEvent: "connect", auth: null, db: 0 };
    const u = new URL(this.target.url);
    const host = u.hostname.replace(/^\[|\]$/g, "");
    const port = u.port ? Number(u.port) : 6379;
    const password = u.password ? decodeURIComponent(u.password) : "";
    const username = u.username ? decodeURIComponent(u.username) : "";
    const auth = password ? (username ? ["AUTH", username, password] : ["AUTH", password]) : null;
    const dbNumber = u.pathname.length > 1 ? Number(u.pathname.slice(1)) : 0;
    const db = Number.isInteger(dbNumber) ? dbNumber : 0;
    if (u.protocol === "rediss:") return { socket: tlsConnect({ host, port, servername: host }), readyEvent: "secureConnect", auth, db };
    return { socket: netConnect({ host, port }), readyEvent: "connect", auth, db };
  }

  private lost(socket: Socket, err: Error): void {
    if (socket !== this.socket) return;
    this.drop(new AppError("redis_unavailable", `session log: lost the connection to Redis: ${err.message}`));
  }

  private drop(err: Error): void {
    const socket = this.socket;
    this.socket = null;
    this.ready = null;
    socket?.destroy();
    for (const p of this.pending.splice(0)) p.reject(err);
  }

  private onData(chunk: Buffer): void {
    this.input = this.input.length === 0 ? chunk : Buffer.concat([this.input, chunk]);
    for (;;) {
      const parsed = parseReply(this.input);
      if (parsed === null) return;
      if (parsed.fatal) return this.drop(new AppError("redis_unavailable", `session log: ${parsed.error}`));
      this.input = this.input.subarray(parsed.length);
      const waiter = this.pending.shift();
      if (waiter === undefined) return this.drop(new AppError("redis_unavailable", "session log: Redis sent a reply nobody asked for"));
      if (parsed.error !== null) waiter.reject(new AppError("redis_unavailable", `session log: Redis refused a write: ${parsed.error}`));
      else waiter.resolve(parsed.value);
    }
  }
}

function writeValue(socket: Socket, parts: readonly Buffer[]): void {
  let length = 0;
  for (const part of parts) length += part.length;
  socket.write(`$${length}\r\n`);
  for (const part of parts) if (part.length > 0) socket.write(part);
  socket.write(CRLF);
}

/** One reply at the start of `input`, or null when it has not fully arrived. */
export function parseReply(input: Buffer): { value: Reply; error: string | null; length: number; fatal?: true } | null {
  const eol = input.indexOf(CRLF);
  if (eol === -1) return null;
  const head = input.toString("latin1", 1, eol);
  switch (input[0]) {
    case 0x2b: // +
      return { value: head, error: null, length: eol + 2 };
    case 0x2d: // -
      return { value: null, error: head, length: eol + 2 };
    case 0x3a: // :
      return { value: Number(head), error: null, length: eol + 2 };
    case 0x24: {
      // $
      const size = Number(head);
      if (size < 0) return { value: null, error: null, length: eol + 2 };
      if (input.length < eol + 2 + size + 2) return null;
      return { value: input.toString("utf8", eol + 2, eol + 2 + size), error: null, length: eol + 2 + size + 2 };
    }
    default:
      return { value: null, error: `unexpected reply type ${JSON.stringify(String.fromCharCode(input[0] ?? 0))}`, length: input.length, fatal: true };
  }
}
