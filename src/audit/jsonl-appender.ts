// Append-only JSONL: one write(2) per row on an O_APPEND fd, rows serialised within the process,
// so concurrent writers (other processes) never interleave inside a line.
import { mkdir, open, type FileHandle } from "node:fs/promises";
import { dirname } from "node:path";

export class JsonlAppender {
  private handle: Promise<FileHandle> | null = null;
  private tail: Promise<void> = Promise.resolve();

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
    const next = this.tail.then(async () => {
      const fh = await this.file();
      let offset = 0;
      while (offset < line.length) {
        const { bytesWritten } = await fh.write(line, offset, line.length - offset);
        offset += bytesWritten;
      }
      if (opts.fsync) await fh.sync();
    });
    this.tail = next.catch(() => {});
    return next;
  }

  /** fsync what was appended so far: lets a caller share one fsync among many rows (group commit). */
  async sync(): Promise<void> {
    if (this.handle) await (await this.handle).sync();
  }

  async close(): Promise<void> {
    await this.tail;
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
