// Append-only JSONL on an O_APPEND fd: rows are serialised within the process and go out whole, several
// at a time when they arrive while a write is under way (one write(2) per batch), so concurrent writers
// (other processes) never interleave inside a line.
import { mkdir, open, type FileHandle } from "node:fs/promises";
import { dirname } from "node:path";

interface PendingRow {
  readonly line: Buffer;
  readonly fsync: boolean;
  resolve(): void;
  reject(err: unknown): void;
}

export class JsonlAppender {
  private handle: Promise<FileHandle> | null = null;
  private pending: PendingRow[] = [];
  private flushing: Promise<void> | null = null;

  constructor(readonly path: string) {}

  private file(): Promise<FileHandle> {
    if (this.handle) return this.handle;
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

  /** Resolves once the row is written (and fsynced when asked); rejects on ENOSPC/EIO so callers do not report success. */
  append(row: object, opts: { fsync?: boolean } = {}): Promise<void> {
    const line = Buffer.from(`${JSON.stringify(row)}\n`, "utf8");
    return new Promise<void>((resolve, reject) => {
      this.pending.push({ line, fsync: opts.fsync === true, resolve, reject });
      this.flushing ??= this.flush();
    });
  }

  private async flush(): Promise<void> {
    while (this.pending.length > 0) {
      const batch = this.pending.splice(0);
      try {
        const fh = await this.file();
        const data = batch.length === 1 ? batch[0]!.line : Buffer.concat(batch.map((row) => row.line));
        let offset = 0;
        while (offset < data.length) {
          const { bytesWritten } = await fh.write(data, offset, data.length - offset);
          offset += bytesWritten;
        }
        if (batch.some((row) => row.fsync)) await fh.sync();
        for (const row of batch) row.resolve();
      } catch (err) {
        for (const row of batch) row.reject(err);
      }
    }
    this.flushing = null;
  }

  /** fsync what was appended so far: lets a caller share one fsync among many rows (group commit). */
  async sync(): Promise<void> {
    if (this.handle) await (await this.handle).sync();
  }

  async close(): Promise<void> {
    await this.flushing;
    const fh = await this.handle?.catch(() => null);
    await fh?.close();
    this.handle = null;
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
