// The audit log's hash chain (ADR 0019): each row carries `seq` and `prev`, the SHA-256 of the row before it
// (its exact line), so an edited, removed or reordered row breaks the chain where it was.
// The chain head (last seq and hash) lives beside the log in a SQLite file, whose write lock is also the
// cross-process lock: a new file after rotation chains to the last row written anywhere, and concurrent
// writers in several processes take turns.
import { hash } from "node:crypto";
import { closeSync, fstatSync, mkdirSync, openSync, readSync, statSync, writeSync, fsyncSync } from "node:fs";
import { dirname } from "node:path";
import { DatabaseSync, type StatementSync } from "node:sqlite";

/** The `prev` of the very first row. */
export const GENESIS = "0".repeat(64);
/** How long a writer waits for another process's turn before the row fails. */
const LOCK_WAIT_MS = 5000;
/** The crash check reads the file's end in growing steps until it holds the last row, up to the cap. */
const TAIL_FIRST_BYTES = 4096;
const TAIL_BYTES = 256 * 1024;
/** A synchronous pause between retries (the turn is synchronous; there is nothing else to wait on). */
const PAUSE = new Int32Array(new SharedArrayBuffer(4));

export interface ChainHead {
  readonly seq: number;
  readonly hash: string;
}

/** One call, no Hash object to build (less than half the cost of createHash for a row). */
export function rowHash(line: string): string {
  return hash("sha256", line, "hex");
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
 * read the head (unless the file ends where this writer left it), write the lines, move the head. The
 * file is reopened when it was rotated away.
 */
export class ChainedLog {
  private db: DatabaseSync | null = null;
  private statements: { head: StatementSync; move: StatementSync } | null = null;
  private fd: number | null = null;
  private ino = 0;
  /** What this writer left after its last turn: while the file (same inode) still ends there, nobody wrote since and the head is this one. */
  private mine: { seq: number; hash: string; size: number } | null = null;

  constructor(readonly path: string) {}

  /** Rows in order, in one turn: one write, one move of the head. */
  appendAll(rows: readonly Record<string, unknown>[], opts: { fsync?: boolean } = {}): void {
    if (rows.length === 0) return;
    // SQLite answers "busy" without waiting in a few cases (setting up the file, switching it to WAL): retry those.
    const deadline = Date.now() + LOCK_WAIT_MS;
    for (let attempt = 1; ; attempt++) {
      const progress = { wrote: false };
      try {
        return this.turn(rows, opts, progress);
      } catch (err) {
        // Once the line is in the file, trying again would write it twice.
        if (progress.wrote || !isBusy(err) || Date.now() > deadline) throw err;
        Atomics.wait(PAUSE, 0, 0, Math.min(50, attempt * 2 + Math.random() * 5));
      }
    }
  }

  private turn(rows: readonly Record<string, unknown>[], opts: { fsync?: boolean }, progress: { wrote: boolean }): void {
    const db = this.database();
    const statements = this.statements!;
    db.exec("BEGIN IMMEDIATE");
    try {
      const fd = this.file();
      const size = fstatSync(fd).size;
      const mine = this.mine;
      // The file as this writer left it (same inode, same size): nobody wrote since, so the head is ours.
      let head: ChainHead =
        mine !== null && mine.size === size ? mine : this.recover(fd, size, (statements.head.get() as ChainHead | undefined) ?? { seq: 0, hash: GENESIS });
      let text = "";
      for (const fields of rows) {
        const line = JSON.stringify({ ...fields, seq: head.seq + 1, prev: head.hash });
        text += `${line}\n`;
        head = { seq: head.seq + 1, hash: rowHash(line) };
      }
      this.mine = null;
      progress.wrote = true;
      const data = Buffer.from(text, "utf8");
      writeAll(fd, data);
      if (opts.fsync) fsyncSync(fd);
      statements.move.run(head.seq, head.hash);
      db.exec("COMMIT");
      this.mine = { seq: head.seq, hash: head.hash, size: size + data.length };
    } catch (err) {
      this.mine = null;
      if (db.isTransaction) db.exec("ROLLBACK");
      throw err;
    }
  }

  close(): void {
    if (this.fd !== null) closeSync(this.fd);
    this.db?.close();
    this.fd = null;
    this.db = null;
    this.statements = null;
    this.mine = null;
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
    this.statements = {
      head: db.prepare("SELECT seq, hash FROM head WHERE id = 1"),
      move: db.prepare("INSERT INTO head (id, seq, hash) VALUES (1, ?, ?) ON CONFLICT(id) DO UPDATE SET seq = excluded.seq, hash = excluded.hash"),
    };
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
      this.mine = null;
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
  private recover(fd: number, size: number, head: ChainHead): ChainHead {
    if (size === 0) return head;
    const last = Buffer.alloc(1);
    readSync(fd, last, 0, 1, size - 1);
    if (last[0] !== 0x0a) {
      writeAll(fd, Buffer.from("\n"));
      return head;
    }
    const line = lastLine(fd, size);
    if (line === null) return head;
    try {
      const row = JSON.parse(line) as { seq?: unknown; prev?: unknown };
      if (row.seq === head.seq + 1 && row.prev === head.hash) return { seq: head.seq + 1, hash: rowHash(line) };
    } catch {
      // not a row: the chain goes on from the head, and verify names this line
    }
    return head;
  }
}

/** The last line of a file that ends in a newline (without it), or null when it is longer than the cap. */
function lastLine(fd: number, size: number): string | null {
  for (let want = TAIL_FIRST_BYTES; ; want *= 4) {
    const start = Math.max(0, size - Math.min(want, TAIL_BYTES));
    const buf = Buffer.alloc(size - 1 - start);
    readSync(fd, buf, 0, buf.length, start);
    const nl = buf.lastIndexOf(0x0a);
    if (nl >= 0 || start === 0) return buf.toString("utf8", nl + 1);
    if (size - start >= TAIL_BYTES) return null;
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
