// The audit log's hash chain (ADR 0019): each row carries `seq` and `prev`, the SHA-256 of the row before it
// (its exact line), so an edited, removed or reordered row breaks the chain where it was.
// The chain head (last seq and hash) lives beside the log in a SQLite file, whose write lock is also the
// cross-process lock: a new file after rotation chains to the last row written anywhere, and concurrent
// writers in several processes take turns.
import { createHash } from "node:crypto";
import { closeSync, fstatSync, mkdirSync, openSync, readSync, statSync, writeSync, fsyncSync } from "node:fs";
import { dirname } from "node:path";
import { DatabaseSync } from "node:sqlite";

/** The `prev` of the very first row. */
export const GENESIS = "0".repeat(64);
/** How long a writer waits for another process's turn before the row fails. */
const LOCK_WAIT_MS = 5000;
/** Enough to hold the last row (rows are small; the crash check only needs the last one). */
const TAIL_BYTES = 256 * 1024;
/** A synchronous pause between retries (the turn is synchronous; there is nothing else to wait on). */
const PAUSE = new Int32Array(new SharedArrayBuffer(4));

export interface ChainHead {
  readonly seq: number;
  readonly hash: string;
}

export function rowHash(line: string): string {
  return createHash("sha256").update(line, "utf8").digest("hex");
}

/** Where the chain head of the log at `path` is kept. */
export function headPath(path: string): string {
  return `${path}.chain`;
}

/** The head as recorded, or null when nothing was ever written through the chain. */
export function readHead(path: string): ChainHead | null {
  let db: DatabaseSync;
  try {
    statSync(headPath(path));
    db = new DatabaseSync(headPath(path), { readOnly: true });
  } catch {
    return null;
  }
  try {
    const row = db.prepare("SELECT seq, hash FROM head WHERE id = 1").get() as { seq: number; hash: string } | undefined;
    return row ? { seq: Number(row.seq), hash: String(row.hash) } : null;
  } finally {
    db.close();
  }
}

/**
 * Appends chained rows to one JSONL file. Every append is one short synchronous turn under the lock:
 * read the head, write the line, move the head. The file is reopened when it was rotated away.
 */
export class ChainedLog {
  private db: DatabaseSync | null = null;
  private fd: number | null = null;
  private ino = 0;

  constructor(readonly path: string) {}

  append(fields: Record<string, unknown>, opts: { fsync?: boolean } = {}): void {
    // SQLite answers "busy" without waiting in a few cases (setting up the file, switching it to WAL): retry those.
    const deadline = Date.now() + LOCK_WAIT_MS;
    for (let attempt = 1; ; attempt++) {
      const progress = { wrote: false };
      try {
        return this.turn(fields, opts, progress);
      } catch (err) {
        // Once the line is in the file, trying again would write it twice.
        if (progress.wrote || !isBusy(err) || Date.now() > deadline) throw err;
        Atomics.wait(PAUSE, 0, 0, Math.min(50, attempt * 2 + Math.random() * 5));
      }
    }
  }

  private turn(fields: Record<string, unknown>, opts: { fsync?: boolean }, progress: { wrote: boolean }): void {
    const db = this.database();
    db.exec("BEGIN IMMEDIATE");
    try {
      const fd = this.file();
      const head = this.recover(fd, (db.prepare("SELECT seq, hash FROM head WHERE id = 1").get() as ChainHead | undefined) ?? { seq: 0, hash: GENESIS });
      const line = JSON.stringify({ ...fields, seq: head.seq + 1, prev: head.hash });
      progress.wrote = true;
      writeAll(fd, Buffer.from(`${line}\n`, "utf8"));
      if (opts.fsync) fsyncSync(fd);
      db.prepare("INSERT INTO head (id, seq, hash) VALUES (1, ?, ?) ON CONFLICT(id) DO UPDATE SET seq = excluded.seq, hash = excluded.hash").run(head.seq + 1, rowHash(line));
      db.exec("COMMIT");
    } catch (err) {
      if (db.isTransaction) db.exec("ROLLBACK");
      throw err;
    }
  }

  close(): void {
    if (this.fd !== null) closeSync(this.fd);
    this.db?.close();
    this.fd = null;
    this.db = null;
  }

  private database(): DatabaseSync {
    if (this.db) return this.db;
    mkdirSync(dirname(this.path), { recursive: true });
    const db = new DatabaseSync(headPath(this.path));
    try {
      db.exec(`PRAGMA busy_timeout = ${LOCK_WAIT_MS}`);
      // A turn must be short: WAL commits append to the log file without an fsync (the audit line has none either).
      if ((db.prepare("PRAGMA journal_mode").get() as { journal_mode: string }).journal_mode !== "wal") db.exec("PRAGMA journal_mode = WAL");
      db.exec("PRAGMA synchronous = NORMAL");
      db.exec("CREATE TABLE IF NOT EXISTS head (id INTEGER PRIMARY KEY CHECK (id = 1), seq INTEGER NOT NULL, hash TEXT NOT NULL)");
    } catch (err) {
      db.close();
      throw err;
    }
    this.db = db;
    return db;
  }

  /** The open file at `path`; a new one when the old was renamed (rotated) or removed. Under the lock. */
  private file(): number {
    if (this.fd !== null) {
      let current: number | null = null;
      try {
        current = statSync(this.path).ino;
      } catch {
        // gone: rotated away without a new file yet
      }
      if (current === this.ino) return this.fd;
      closeSync(this.fd);
      this.fd = null;
    }
    const fd = openSync(this.path, "a+", 0o600);
    this.ino = fstatSync(fd).ino;
    this.fd = fd;
    return fd;
  }

  /**
   * A writer that died between its write and moving the head left a row the head does not know:
   * adopt it when it is exactly the next link. A torn line (died mid-write) gets its newline, so it
   * stands alone and the next row chains past it.
   */
  private recover(fd: number, head: ChainHead): ChainHead {
    const size = fstatSync(fd).size;
    if (size === 0) return head;
    const start = Math.max(0, size - TAIL_BYTES);
    const buf = Buffer.alloc(size - start);
    readSync(fd, buf, 0, buf.length, start);
    if (buf[buf.length - 1] !== 0x0a) {
      writeAll(fd, Buffer.from("\n"));
      return head;
    }
    const text = buf.toString("utf8", 0, buf.length - 1);
    const line = text.slice(text.lastIndexOf("\n") + 1);
    try {
      const row = JSON.parse(line) as { seq?: unknown; prev?: unknown };
      if (row.seq === head.seq + 1 && row.prev === head.hash) return { seq: head.seq + 1, hash: rowHash(line) };
    } catch {
      // not a row: the chain goes on from the head, and verify names this line
    }
    return head;
  }
}

/** SQLITE_BUSY / SQLITE_LOCKED, with any extended code. */
function isBusy(err: unknown): boolean {
  const code = (err as { errcode?: unknown }).errcode;
  return typeof code === "number" && ((code & 0xff) === 5 || (code & 0xff) === 6);
}

function writeAll(fd: number, data: Buffer): void {
  let offset = 0;
  while (offset < data.length) offset += writeSync(fd, data, offset, data.length - offset);
}
