// A lean Redis connection for the one hot write path: appending a child's log lines to a stream.
// A value can be handed over as many buffers, which go out in one writev without being joined first
// (ioredis copies every argument into one buffer per command, and a pipeline copies them again).
// Only what the session log needs is spoken: RESP2 commands in, simple replies out (no arrays).
// A lost connection fails the commands in flight; the next command connects again.
// On a Redis Cluster it follows MOVED (the slot lives elsewhere now: the connection moves there) and
// ASK (a slot being migrated: this one command goes there after ASKING), and dials the seed nodes in turn (ADR 0018).
import { connect as netConnect, type Socket } from "node:net";
import { AppError } from "../errors.js";
import { describeTarget, formatNode, type ClusterNode, type RedisTarget } from "./target.js";
import { dialTls } from "./tls-dial.js";

/** One argument: text, bytes, or bytes in pieces sent back to back as one value. */
export type CommandArg = string | Buffer | readonly Buffer[];

type Reply = string | number | null;

interface Pending {
  readonly args: readonly CommandArg[];
  readonly redirects: number;
  resolve(reply: Reply): void;
  reject(err: Error): void;
}

/** One socket and the commands waiting for its replies (in order). */
interface Link {
  readonly socket: Socket;
  readonly pending: Pending[];
  input: Buffer;
  /** After MOVED: takes no new commands, and ends once its last reply is in. */
  retired: boolean;
}

const CRLF = Buffer.from("\r\n");
const DEFAULT_CONNECT_TIMEOUT_MS = 3000;
/** As ioredis' maxRedirections: a slot bouncing between nodes longer than this is a broken cluster. */
const MAX_REDIRECTS = 16;

export class StreamAppender {
  private link: Link | null = null;
  private ready: Promise<Link> | null = null;
  private closed = false;
  /** Cluster only: the node that last held our slot, tried before the seeds. */
  private preferred: ClusterNode | null = null;

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
  command(args: readonly CommandArg[]): Promise<Reply> {
    return this.commandWith(args, 0);
  }

  /** Ends the connection; commands in flight fail. */
  close(): void {
    this.closed = true;
    this.drop(new AppError("redis_unavailable", "the session log connection was closed"));
  }

  private async commandWith(args: readonly CommandArg[], redirects: number): Promise<Reply> {
    if (this.closed) throw new AppError("redis_unavailable", "the session log connection is closed");
    const link = await this.connection();
    return this.send(link, args, redirects);
  }

  private send(link: Link, args: readonly CommandArg[], redirects: number): Promise<Reply> {
    return new Promise<Reply>((resolve, reject) => {
      // Lost between connecting and sending: no reply would ever come for a write to it.
      if (link.socket.destroyed) return reject(new AppError("redis_unavailable", "session log: lost the connection to Redis"));
      link.pending.push({ args, redirects, resolve, reject });
      writeCommand(link.socket, args);
    });
  }

  private connection(): Promise<Link> {
    this.ready ??= this.openAny().then(
      (link) => {
        this.link = link;
        return link;
      },
      (err: Error) => {
        this.ready = null;
        throw err;
      },
    );
    return this.ready;
  }

  /** One server: its address. A cluster: the node last seen holding our slot, then each seed in turn. */
  private async openAny(): Promise<Link> {
    if (this.target.kind !== "cluster") return this.open(null);
    const candidates = [...(this.preferred ? [this.preferred] : []), ...this.target.nodes];
    let last: Error = new Error("no seed nodes");
    for (const node of candidates) {
      try {
        return await this.open(node);
      } catch (err) {
        last = err as Error;
      }
    }
    throw last;
  }

  private async open(node: ClusterNode | null): Promise<Link> {
    const { socket, readyEvent, auth, db } = this.dial(node);
    const link: Link = { socket, pending: [], input: Buffer.alloc(0), retired: false };
    socket.on("data", (chunk: Buffer) => this.onData(link, chunk));
    socket.on("error", (err) => this.lost(link, err));
    socket.on("close", () => this.lost(link, new Error("connection closed")));
    const where = node ? `${describeTarget(this.target)} (node ${formatNode(node)})` : describeTarget(this.target);
    try {
      await new Promise<void>((resolve, reject) => {
        const timer = setTimeout(() => reject(new Error(`no connection within ${this.connectTimeoutMs} ms`)), this.connectTimeoutMs);
        socket.once(readyEvent, () => {
          clearTimeout(timer);
          resolve();
        });
        // The error first (it says why: refused, an untrusted certificate); close follows it.
        socket.once("error", (err) => {
          clearTimeout(timer);
          reject(err);
        });
        socket.once("close", () => {
          clearTimeout(timer);
          reject(new Error("connection refused or closed"));
        });
      });
    } catch (err) {
      socket.destroy();
      throw new AppError("redis_unavailable", `session log: cannot reach Redis at ${where}: ${(err as Error).message}`);
    }
    try {
      if (auth) await this.send(link, auth, MAX_REDIRECTS);
      if (db !== 0) await this.send(link, ["SELECT", String(db)], MAX_REDIRECTS);
    } catch (err) {
      // A refused AUTH or SELECT: this connection is no use, and the next command dials again.
      this.fail(link, err as Error);
      throw err;
    }
    return link;
  }

  private dial(node: ClusterNode | null): { socket: Socket; readyEvent: "connect" | "secureConnect"; auth: string[] | null; db: number } {
    const target = this.target;
    if (target.kind === "socket") return { socket: netConnect({ path: target.path }), readyEvent: "connect", auth: null, db: 0 };
    let host: string, port: number, username: string, password: string, tls: boolean, db: number;
    if (target.kind === "cluster") {
      ({ host, port } = node ?? (target.nodes[0] as ClusterNode));
      username = target.username ?? "";
      password = target.password ?? "";
      tls = target.tls;
      db = 0;
    } else {
      const u = new URL(target.url);
      host = u.hostname.replace(/^\[|\]$/g, "");
      port = u.port ? Number(u.port) : 6379;
      password = u.password ? decodeURIComponent(u.password) : "";
      username = u.username ? decodeURIComponent(u.username) : "";
      tls = u.protocol === "rediss:";
      const dbNumber = u.pathname.length > 1 ? Number(u.pathname.slice(1)) : 0;
      db = Number.isInteger(dbNumber) ? dbNumber : 0;
    }
    const auth = password ? (username ? ["AUTH", username, password] : ["AUTH", password]) : null;
    if (tls) return { socket: dialTls(host, port), readyEvent: "secureConnect", auth, db };
    return { socket: netConnect({ host, port }), readyEvent: "connect", auth, db };
  }

  private lost(link: Link, err: Error): void {
    this.fail(link, new AppError("redis_unavailable", `session log: lost the connection to Redis: ${err.message}`));
  }

  private drop(err: Error): void {
    if (this.link) this.fail(this.link, err);
    this.link = null;
    this.ready = null;
  }

  /** Ends one link and fails what waits on it; when it is the current one, the next command dials again. */
  private fail(link: Link, err: Error): void {
    if (this.link === link) {
      this.link = null;
      this.ready = null;
    }
    link.socket.destroy();
    for (const p of link.pending.splice(0)) p.reject(err);
  }

  private onData(link: Link, chunk: Buffer): void {
    link.input = link.input.length === 0 ? chunk : Buffer.concat([link.input, chunk]);
    for (;;) {
      const parsed = parseReply(link.input);
      if (parsed === null) return;
      if (parsed.fatal) return this.fail(link, new AppError("redis_unavailable", `session log: ${parsed.error}`));
      link.input = link.input.subarray(parsed.length);
      const waiter = link.pending.shift();
      if (waiter === undefined) return this.fail(link, new AppError("redis_unavailable", "session log: Redis sent a reply nobody asked for"));
      if (parsed.error === null) waiter.resolve(parsed.value);
      else if (!this.redirect(link, waiter, parsed.error))
        waiter.reject(new AppError("redis_unavailable", `session log: Redis refused a write: ${parsed.error}`));
      if (link.retired && link.pending.length === 0) link.socket.destroy();
    }
  }

  /** MOVED / ASK from a cluster node: the command is sent again where the slot is; false when it is no redirect. */
  private redirect(link: Link, waiter: Pending, error: string): boolean {
    const match = /^(MOVED|ASK) \d+ (.+):(\d+)$/.exec(error);
    if (!match || this.target.kind !== "cluster" || waiter.redirects >= MAX_REDIRECTS) return false;
    const node: ClusterNode = { host: (match[2] as string).replace(/^\[|\]$/g, ""), port: Number(match[3]) };
    if (match[1] === "MOVED") {
      this.preferred = node;
      // New commands go to the new owner; this link stays open until its own replies are in.
      link.retired = true;
      if (this.link === link) {
        this.link = null;
        this.ready = null;
      }
      this.commandWith(waiter.args, waiter.redirects + 1).then(waiter.resolve, waiter.reject);
    } else {
      this.askOnce(node, waiter).then(waiter.resolve, waiter.reject);
    }
    return true;
  }

  /** ASK: ASKING then the command, on a connection of its own that ends after the reply. */
  private async askOnce(node: ClusterNode, waiter: Pending): Promise<Reply> {
    const link = await this.open(node);
    try {
      await this.send(link, ["ASKING"], MAX_REDIRECTS);
      return await this.send(link, waiter.args, waiter.redirects + 1);
    } finally {
      link.socket.destroy();
    }
  }
}

function writeCommand(socket: Socket, args: readonly CommandArg[]): void {
  socket.cork();
  socket.write(`*${args.length}\r\n`);
  for (const arg of args) {
    if (typeof arg === "string") socket.write(`$${Buffer.byteLength(arg)}\r\n${arg}\r\n`);
    else if (Buffer.isBuffer(arg)) writeValue(socket, [arg]);
    else writeValue(socket, arg as readonly Buffer[]);
  }
  socket.uncork();
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
