// The embedded Redis (docs/contracts.md): one redis-server per data dir, on a unix socket, shared by every process.
// A process joins a live server; with none it starts one under a lock, owns it and stops it on exit.
// The server is detached so that a crashed owner leaves it running for the next process to adopt (never a second one).
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

export class EmbeddedRedis {
  private constructor(
    readonly dir: string,
    readonly socketPath: string,
    /** pid of the redis-server when this process owns it. */
    readonly pid: number | null,
    private readonly log: Logger,
  ) {}

  get owned(): boolean {
    return this.pid !== null;
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
      if (await pingSocket(p.socket)) return EmbeddedRedis.join(p, opts.log);
      if (tryLock(p.lock)) break;
      if (Date.now() > deadline) {
        throw new AppError("embedded_redis_failed", `another process holds ${p.lock} and no Redis answered at ${p.socket} within ${START_TIMEOUT_MS / 1000} s`);
      }
      await sleep(100);
    }
    try {
      // Someone may have finished starting it between our ping and our lock.
      if (await pingSocket(p.socket)) return EmbeddedRedis.join(p, opts.log);
      if (opts.registryDir !== undefined) {
        const others = await liveEmbeddedRedis(opts.registryDir, opts.dataDir);
        if (others.length > 0) opts.onOthersLive?.(others);
      }
      const started = await EmbeddedRedis.start(p, opts);
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
  private static join(p: ReturnType<typeof EmbeddedRedis.paths>, log: Logger): EmbeddedRedis {
    const ownerPid = readPid(p.owner);
    const serverPid = readPid(p.serverPid);
    if (ownerPid !== null && !processAlive(ownerPid) && serverPid !== null && processAlive(serverPid) && tryLock(p.lock)) {
      try {
        writeFileSync(p.owner, `${process.pid}\n`);
      } finally {
        rmSync(p.lock, { force: true });
      }
      log.info({ socket: p.socket, redis_pid: serverPid, dead_owner_pid: ownerPid }, "adopted the embedded Redis of a process that exited");
      return new EmbeddedRedis(p.dir, p.socket, serverPid, log);
    }
    log.debug({ socket: p.socket }, "joined the embedded Redis");
    return new EmbeddedRedis(p.dir, p.socket, null, log);
  }

  private static async start(p: ReturnType<typeof EmbeddedRedis.paths>, opts: EmbeddedRedisOptions): Promise<EmbeddedRedis> {
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
    return new EmbeddedRedis(p.dir, p.socket, pid, opts.log);
  }

  /** Stop the server if this process owns it; a joiner leaves it to its owner. */
  async stop(): Promise<void> {
    if (this.pid === null) return;
    const p = EmbeddedRedis.paths(join(this.dir, ".."));
    if (processAlive(this.pid)) {
      // SIGTERM makes redis fsync its AOF and exit cleanly.
      process.kill(this.pid, "SIGTERM");
      if (!(await waitForExit(this.pid, STOP_TIMEOUT_MS))) {
        this.log.warn({ redis_pid: this.pid }, "embedded Redis ignored SIGTERM; killing it");
        process.kill(this.pid, "SIGKILL");
        await waitForExit(this.pid, 2000);
      }
    }
    if (readPid(p.owner) === process.pid) rmSync(p.owner, { force: true });
    this.log.info({ redis_pid: this.pid }, "stopped the embedded Redis");
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
