// The embedded Redis (docs/contracts.md): one redis-server per data dir, on a unix socket, shared by every process.
// A process joins a live server; with none it starts one under a lock, owns it and stops it on exit.
// The server is detached so that a crashed owner leaves it running for the next process to adopt (never a second one).
// A service watches it: a server that dies is started again on its AOF, a bounded number of times (ADR 0041);
// while a live owner has a dead server, no other process starts one — the owner's watch restarts it.
import { spawn } from "node:child_process";
import { createHash } from "node:crypto";
import { mkdirSync, openSync, closeSync, writeSync, readFileSync, readdirSync, rmSync, existsSync, writeFileSync } from "node:fs";
import { join, resolve } from "node:path";
import { AppError } from "../errors.js";
import type { Logger } from "../log.js";
import { findOnPath } from "./find-binary.js";
import { pingSocket } from "./ping-socket.js";
import { processAlive, waitForExit } from "./process-alive.js";

/** Linux sun_path is 108 bytes including the terminating NUL. */
const MAX_SOCKET_PATH = 107;
const START_TIMEOUT_MS = 15_000;
const STOP_TIMEOUT_MS = 10_000;
/** How often a service looks whether its embedded Redis still runs. */
const WATCH_MS = 500;
/** More restarts than this within RESTART_WINDOW_MS means something kills it or it cannot run: the service stops. */
export const RESTARTS_MAX = 5;
export const RESTART_WINDOW_MS = 10 * 60_000;

export interface EmbeddedRedisOptions {
  readonly dataDir: string;
  readonly log: Logger;
  readonly redisServerBin?: string;
  /**
   * The user's list of embedded Redis servers (one file each), so that starting one in a new data dir can say
   * that another is live elsewhere: a CLI started from another directory, or with another SCQ_DATA_DIR.
   */
  readonly registryDir?: string;
  /** Called before a new server starts while servers of other data dirs answer. */
  readonly onOthersLive?: (dataDirs: readonly string[]) => void;
}

interface RegistryEntry {
  readonly data_dir: string;
  readonly socket: string;
  readonly pid: number;
}

/** Data dirs (other than `dataDir`) whose embedded Redis answers now; entries that do not answer are removed. */
export async function liveEmbeddedRedis(registryDir: string, dataDir: string): Promise<string[]> {
  let names: string[];
  try {
    names = readdirSync(registryDir).filter((n) => n.endsWith(".json"));
  } catch {
    return [];
  }
  const live: string[] = [];
  for (const name of names) {
    const path = join(registryDir, name);
    try {
      const entry = JSON.parse(readFileSync(path, "utf8")) as RegistryEntry;
      if (await pingSocket(entry.socket)) {
        if (resolve(entry.data_dir) !== resolve(dataDir)) live.push(entry.data_dir);
      } else {
        rmSync(path, { force: true });
      }
    } catch {
      rmSync(path, { force: true });
    }
  }
  return live;
}

function registryFile(registryDir: string, dataDir: string): string {
  return join(registryDir, `${createHash("sha256").update(resolve(dataDir)).digest("hex").slice(0, 16)}.json`);
}

/** What a service hears from its watch of the embedded Redis. */
export interface RedisWatch {
  /** The server had died and runs again, on its AOF; `restart` counts within RESTART_WINDOW_MS. */
  onRestarted(info: { readonly deadPid: number | null; readonly pid: number; readonly restart: number }): void;
  /** The server is down and will not be started again (too many deaths and failed starts): the service must stop. */
  onGiveUp(reason: string): void;
}

type Paths = ReturnType<typeof EmbeddedRedis.paths>;

export class EmbeddedRedis {
  private constructor(
    private readonly p: Paths,
    /** pid of the redis-server when this process owns it. */
    private ownPid: number | null,
    private readonly opts: EmbeddedRedisOptions,
  ) {}

  get dir(): string {
    return this.p.dir;
  }

  get socketPath(): string {
    return this.p.socket;
  }

  /** pid of the redis-server when this process owns it (a restart by this process's watch changes it). */
  get pid(): number | null {
    return this.ownPid;
  }

  get owned(): boolean {
    return this.ownPid !== null;
  }

  static paths(dataDir: string): { dir: string; socket: string; lock: string; owner: string; serverPid: string; logFile: string } {
    const dir = join(resolve(dataDir), "redis");
    return {
      dir,
      socket: join(dir, "redis.sock"),
      lock: join(dir, "start.lock"),
      owner: join(dir, "owner.pid"),
      serverPid: join(dir, "redis-server.pid"),
      logFile: join(dir, "redis.log"),
    };
  }

  static async joinOrStart(opts: EmbeddedRedisOptions): Promise<EmbeddedRedis> {
    const p = EmbeddedRedis.paths(opts.dataDir);
    if (Buffer.byteLength(p.socket) > MAX_SOCKET_PATH) {
      throw new AppError(
        "embedded_redis_failed",
        `SCQ_DATA_DIR is too deep for a unix socket (${p.socket} is over ${MAX_SOCKET_PATH} bytes): choose a shorter SCQ_DATA_DIR or set REDIS_URL`,
      );
    }
    mkdirSync(p.dir, { recursive: true, mode: 0o700 });

    const deadline = Date.now() + START_TIMEOUT_MS;
    for (;;) {
      if (await pingSocket(p.socket)) return EmbeddedRedis.join(p, opts);
      // A live owner restarts its own server: a second one here would be another, empty Redis under the service.
      const owner = liveOwner(p);
      if (owner === null && tryLock(p.lock)) break;
      if (Date.now() > deadline) {
        throw new AppError(
          "embedded_redis_failed",
          owner !== null
            ? `the embedded Redis at ${p.socket} does not answer and its owner, pid ${owner}, is alive (a sandcastle-queue service restarts its Redis when it dies): no second one is started; see ${p.logFile}`
            : `another process holds ${p.lock} and no Redis answered at ${p.socket} within ${START_TIMEOUT_MS / 1000} s`,
        );
      }
      await sleep(100);
    }
    try {
      // Someone may have finished starting it between our ping and our lock.
      if (await pingSocket(p.socket)) return EmbeddedRedis.join(p, opts);
      if (opts.registryDir !== undefined) {
        const others = await liveEmbeddedRedis(opts.registryDir, opts.dataDir);
        if (others.length > 0) opts.onOthersLive?.(others);
      }
      const started = new EmbeddedRedis(p, await EmbeddedRedis.start(p, opts), opts);
      if (opts.registryDir !== undefined) {
        try {
          mkdirSync(opts.registryDir, { recursive: true, mode: 0o700 });
          const entry: RegistryEntry = { data_dir: resolve(opts.dataDir), socket: p.socket, pid: started.pid ?? 0 };
          writeFileSync(registryFile(opts.registryDir, opts.dataDir), `${JSON.stringify(entry)}\n`, { mode: 0o600 });
        } catch (err) {
          opts.log.warn({ err: (err as Error).message }, "could not record the embedded Redis in the user's list");
        }
      }
      return started;
    } finally {
      rmSync(p.lock, { force: true });
    }
  }

  /** Join a live server; adopt it when its owner died (so it is stopped when we exit, never left behind). */
  private static join(p: Paths, opts: EmbeddedRedisOptions): EmbeddedRedis {
    const { log } = opts;
    const ownerPid = readPid(p.owner);
    const serverPid = readPid(p.serverPid);
    if (ownerPid !== null && !processAlive(ownerPid) && serverPid !== null && processAlive(serverPid) && tryLock(p.lock)) {
      try {
        writeFileSync(p.owner, `${process.pid}\n`);
      } finally {
        rmSync(p.lock, { force: true });
      }
      log.info({ socket: p.socket, redis_pid: serverPid, dead_owner_pid: ownerPid }, "adopted the embedded Redis of a process that exited");
      return new EmbeddedRedis(p, serverPid, opts);
    }
    log.debug({ socket: p.socket }, "joined the embedded Redis");
    return new EmbeddedRedis(p, null, opts);
  }

  /** Starts redis-server on the data dir (its AOF, if any, is loaded); the caller holds the lock. Returns its pid. */
  private static async start(p: Paths, opts: EmbeddedRedisOptions): Promise<number> {
    const bin = opts.redisServerBin ?? findOnPath("redis-server");
    if (bin === null) {
      throw new AppError(
        "redis_not_installed",
        "no Redis to use: REDIS_URL is not set and redis-server is not on PATH. Fix it one of two ways: " +
          "install redis-server (Debian/Ubuntu: apt-get install -y redis-server; macOS: brew install redis), " +
          "or run one and point REDIS_URL at it (docker compose up -d redis; REDIS_URL=redis://127.0.0.1:6379).",
      );
    }
    rmSync(p.socket, { force: true });
    const args = [
      "--port", "0",
      "--unixsocket", p.socket,
      "--unixsocketperm", "700",
      "--dir", p.dir,
      "--appendonly", "yes",
      "--appendfsync", "always",
      "--save", "",
      "--maxmemory-policy", "noeviction",
      "--daemonize", "no",
      "--pidfile", p.serverPid,
      "--logfile", p.logFile,
    ];
    const child = spawn(bin, args, { detached: true, stdio: "ignore" });
    const pid = child.pid;
    if (pid === undefined) throw new AppError("embedded_redis_failed", `could not start ${bin}`);
    let exitCode: number | null = null;
    child.on("exit", (code) => {
      exitCode = code ?? -1;
    });
    child.unref();
    writeFileSync(p.owner, `${process.pid}\n`);
    writeFileSync(p.serverPid, `${pid}\n`);

    const deadline = Date.now() + START_TIMEOUT_MS;
    while (!(await pingSocket(p.socket))) {
      if (exitCode !== null || Date.now() > deadline) {
        if (processAlive(pid)) process.kill(pid, "SIGKILL");
        throw new AppError("embedded_redis_failed", `redis-server did not come up at ${p.socket}: ${tailOf(p.logFile)}`);
      }
      await sleep(50);
    }
    opts.log.info({ socket: p.socket, redis_pid: pid, data_dir: p.dir }, "started the embedded Redis");
    return pid;
  }

  /**
   * Looks every WATCH_MS whether the server runs. When it died and this process owns it, or nobody alive does, it is
   * started again on the same data dir (its AOF: nothing acknowledged is lost, appendfsync always), under the start
   * lock, and this process owns it; a start that fails counts as one more death; past RESTARTS_MAX restarts within
   * RESTART_WINDOW_MS it gives up. A dead server whose live owner is another process is left to that owner. Returns how to stop watching.
   */
  watch(events: RedisWatch): () => Promise<void> {
    const restarts: number[] = [];
    let lastFailure: string | null = null;
    let checking: Promise<void> | null = null;
    let stopped = false;
    const check = async () => {
      const serverPid = readPid(this.p.serverPid);
      if (serverPid !== null && processAlive(serverPid)) return;
      if (liveOwner(this.p) !== null || (await pingSocket(this.p.socket))) return;
      const now = Date.now();
      while (restarts.length > 0 && restarts[0]! <= now - RESTART_WINDOW_MS) restarts.shift();
      if (restarts.length >= RESTARTS_MAX) {
        stopped = true;
        const last = lastFailure === null ? "" : ` (the last start failed: ${lastFailure})`;
        return events.onGiveUp(
          `the embedded Redis died ${restarts.length + 1} times within ${RESTART_WINDOW_MS / 60_000} min${last}; not starting it again (see ${this.p.logFile})`,
        );
      }
      restarts.push(now);
      this.opts.log.error(
        { redis_pid: serverPid, socket: this.p.socket, restart: restarts.length, of: RESTARTS_MAX },
        "the embedded Redis died; starting it again on its AOF",
      );
      try {
        const pid = await this.restart();
        lastFailure = null;
        if (pid !== null) events.onRestarted({ deadPid: serverPid, pid, restart: restarts.length });
      } catch (err) {
        // A start that fails counts as a death: the next look tries again, within the same bound.
        lastFailure = (err as Error).message;
        this.opts.log.error({ err: lastFailure }, "the embedded Redis could not be started again");
      }
    };
    const timer = setInterval(() => {
      if (stopped || checking) return;
      checking = check().finally(() => (checking = null));
    }, WATCH_MS);
    timer.unref();
    return async () => {
      stopped = true;
      clearInterval(timer);
      await checking;
    };
  }

  /** Starts the server again under the lock; null when another process got there first (then it owns it). */
  private async restart(): Promise<number | null> {
    const deadline = Date.now() + START_TIMEOUT_MS;
    while (!tryLock(this.p.lock)) {
      if (Date.now() > deadline) throw new AppError("embedded_redis_failed", `another process holds ${this.p.lock}`);
      await sleep(100);
    }
    try {
      if (await pingSocket(this.p.socket)) return null;
      this.ownPid = await EmbeddedRedis.start(this.p, this.opts);
      return this.ownPid;
    } finally {
      rmSync(this.p.lock, { force: true });
    }
  }

  /** Stop the server if this process owns it; a joiner leaves it to its owner. */
  async stop(): Promise<void> {
    const pid = this.ownPid;
    if (pid === null) return;
    const { log } = this.opts;
    if (processAlive(pid)) {
      // SIGTERM makes redis fsync its AOF and exit cleanly.
      process.kill(pid, "SIGTERM");
      if (!(await waitForExit(pid, STOP_TIMEOUT_MS))) {
        log.warn({ redis_pid: pid }, "embedded Redis ignored SIGTERM; killing it");
        process.kill(pid, "SIGKILL");
        await waitForExit(pid, 2000);
      }
    }
    if (readPid(this.p.owner) === process.pid) rmSync(this.p.owner, { force: true });
    log.info({ redis_pid: pid }, "stopped the embedded Redis");
  }
}

/** O_EXCL lock file holding our pid; a lock left by a dead process is taken over. */
function tryLock(path: string): boolean {
  try {
    const fd = openSync(path, "wx", 0o600);
    writeSync(fd, `${process.pid}\n`);
    closeSync(fd);
    return true;
  } catch (err) {
    if ((err as NodeJS.ErrnoException).code !== "EEXIST") throw err;
    const holder = readPid(path);
    if (holder !== null && processAlive(holder)) return false;
    rmSync(path, { force: true });
    return false;
  }
}

/** The pid in owner.pid when that process is alive and not this one: the server is its to start. */
function liveOwner(p: Paths): number | null {
  const owner = readPid(p.owner);
  return owner !== null && owner !== process.pid && processAlive(owner) ? owner : null;
}

function readPid(path: string): number | null {
  if (!existsSync(path)) return null;
  const n = Number.parseInt(readFileSync(path, "utf8").trim(), 10);
  return Number.isInteger(n) && n > 0 ? n : null;
}

function tailOf(logFile: string): string {
  try {
    return readFileSync(logFile, "utf8").trim().split("\n").slice(-5).join(" | ");
  } catch {
    return "(no redis log)";
  }
}

const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));
