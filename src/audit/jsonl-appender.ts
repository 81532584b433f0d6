// Durable append-only JSONL on an O_APPEND fd (the Margot ledger, research follow-ups). An append resolves
// only once its row is written and an fdatasync that began after the write has finished. The rows appended
// before the microtask queue drains go out in one write(2), so concurrent writers (other processes) never
// interleave inside a line, and the rows written while fdatasyncs run share the next one (group commit): one
// fsync per row capped the Margot bridge at a few hundred rows a second.
import { fdatasync, writeSync } from "node:fs";
import { mkdir, open, type FileHandle } from "node:fs/promises";
import { dirname } from "node:path";

/** fdatasyncs of one file at once (each holds a thread of libuv's pool of four). */
const MAX_SYNCS = 2;

interface PendingRow {
  readonly line: string;
  resolve(): void;
  reject(err: unknown): void;
}

export class JsonlAppender {
  private handle: Promise<FileHandle> | null = null;
  /** Appended, not written yet (they go out together once the microtask queue drains). */
  private queued: PendingRow[] = [];
  /** Written, waiting for an fdatasync that began after their write. */
  private unsynced: PendingRow[] = [];
  private flushing: Promise<void> | null = null;
  /** fdatasyncs running: a second may start while one runs, so a row waits for at most one begun after it. */
  private syncing = 0;
  private idle: Array<() => void> = [];

  constructor(readonly path: string) {}

  private file(): Promise<FileHandle> {
    if (this.handle) return this.handle;
    // Opened off the event loop: a path that blocks (a FIFO without a reader, a hung mount) holds the rows, not the process.
    const opening = (async () => {
      await mkdir(dirname(this.path), { recursive: true });
      const fh = await open(this.path, "a", 0o600);
      // A torn last line (a writer killed mid-append) must not swallow our first row.
      const size = (await fh.stat()).size;
      if (size > 0) {
        const last = Buffer.alloc(1);
        const reader = await open(this.path, "r");
        try {
          await reader.read(last, 0, 1, size - 1);
        } finally {
          await reader.close();
        }
        if (last[0] !== 0x0a) await fh.write("\n");
      }
      return fh;
    })();
    this.handle = opening;
    // A path that cannot be opened now (a missing mount, a full disk) is tried again by the next row.
    opening.catch(() => {
      if (this.handle === opening) this.handle = null;
    });
    return opening;
  }

  /** Resolves once the row is on disk; rejects on ENOSPC/EIO so callers do not report success. */
  append(row: object): Promise<void> {
    const line = `${JSON.stringify(row)}\n`;
    return new Promise<void>((resolve, reject) => {
      this.queued.push({ line, resolve, reject });
      if (this.queued.length === 1 && !this.flushing) queueMicrotask(() => void this.flush());
    });
  }

  private flush(): Promise<void> {
    this.flushing ??= this.writeQueued().finally(() => {
      this.flushing = null;
      if (this.queued.length > 0) queueMicrotask(() => void this.flush());
      this.settle();
    });
    return this.flushing;
  }

  private async writeQueued(): Promise<void> {
    let fd: number;
    try {
      fd = (await this.file()).fd;
    } catch (err) {
      for (const row of this.queued.splice(0)) row.reject(err);
      return;
    }
    // Rows queued while the file was being opened go out in the same write.
    const batch = this.queued.splice(0);
    if (batch.length === 0) return;
    try {
      const data = Buffer.from(batch.length === 1 ? batch[0]!.line : batch.map((row) => row.line).join(""), "utf8");
      for (let offset = 0; offset < data.length; ) offset += writeSync(fd, data, offset, data.length - offset);
    } catch (err) {
      for (const row of batch) row.reject(err);
      return;
    }
    this.unsynced.push(...batch);
    this.sync(fd);
  }

  /** One fdatasync for every row written before it began; rows written while two run wait for the next. */
  private sync(fd: number): void {
    if (this.syncing >= MAX_SYNCS || this.unsynced.length === 0) return;
    this.syncing++;
    const batch = this.unsynced.splice(0);
    fdatasync(fd, (err) => {
      this.syncing--;
      for (const row of batch) {
        if (err) row.reject(err);
        else row.resolve();
      }
      this.sync(fd);
      this.settle();
    });
  }

  /** Rows not yet on disk (or refused), or a write or fdatasync under way. */
  private get busy(): boolean {
    return this.queued.length > 0 || this.unsynced.length > 0 || this.syncing > 0 || this.flushing !== null;
  }

  private settle(): void {
    if (!this.busy) for (const done of this.idle.splice(0)) done();
  }

  /** Waits for every row appended so far to be on disk (or refused), then closes the file. */
  async close(): Promise<void> {
    if (this.busy) {
      await new Promise<void>((resolve) => {
        this.idle.push(resolve);
        if (this.queued.length > 0) void this.flush();
      });
    }
    const handle = this.handle;
    this.handle = null;
    const fh = await handle?.catch(() => null);
    await fh?.close();
  }
}

/** Rows of a JSONL file, skipping a torn or malformed line instead of failing the read. */
export function parseJsonl(text: string): unknown[] {
  const rows: unknown[] = [];
  for (const line of text.split("\n")) {
    if (line.trim() === "") continue;
    try {
      rows.push(JSON.parse(line));
    } catch {
      // torn tail of a crashed writer
    }
  }
  return rows;
}
