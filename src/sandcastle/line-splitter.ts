// Splits a child's byte stream into lines with bounded memory: a line longer than the cap is cut
// with a marker and the rest of it dropped, so 50 MB without a newline costs 64 KiB, not 50 MB.
// (readline and execa's line splitting both buffer an unterminated line without bound.)
// It works on bytes: "\n" is one byte in UTF-8 and never part of a longer character, so lines are
// cut without decoding, and a line is decoded only when it is whole.

export const MAX_LINE_BYTES = 64 * 1024;

/** What ends a line that was cut. */
export function truncationMarker(droppedBytes: number): string {
  return ` …[line truncated: ${droppedBytes} more bytes]`;
}

/** How many of `piece`'s first `room` bytes can be kept without cutting a UTF-8 character (backs off over continuation bytes, 10xxxxxx). */
export function characterBoundary(piece: Buffer, room: number): number {
  let taken = Math.min(room, piece.length);
  while (taken > 0 && taken < piece.length && (piece[taken]! & 0xc0) === 0x80) taken -= 1;
  return taken;
}

const NEWLINE = 0x0a;

export class LineSplitter {
  /** Bytes of an unfinished line (copies, so a chunk is never pinned), at most maxBytes in all. */
  private parts: Buffer[] = [];
  private keptBytes = 0;
  private droppedBytes = 0;

  /**
   * With `onBlock`, the whole lines that lie entirely inside one chunk arrive as one slice of the chunk,
   * lines joined by "\n" and not decoded (a chunk no longer than the cap cannot hold an over-long line);
   * lines that straddle chunks still arrive one by one through `onLine`. Handling a block at once is what
   * keeps the pipeline near readline's speed.
   */
  constructor(
    private readonly onLine: (line: string) => void,
    private readonly maxBytes = MAX_LINE_BYTES,
    private readonly onBlock?: (lines: Buffer) => void,
  ) {}

  push(chunk: Buffer): void {
    let start = 0;
    if (this.parts.length > 0 || this.droppedBytes > 0) {
      const first = chunk.indexOf(NEWLINE);
      if (first === -1) return this.keep(chunk);
      this.keep(chunk.subarray(0, first));
      this.emit();
      start = first + 1;
    }
    if (this.onBlock && chunk.length <= this.maxBytes) {
      const last = chunk.lastIndexOf(NEWLINE);
      if (last >= start) {
        this.onBlock(chunk.subarray(start, last));
        start = last + 1;
      }
    } else {
      for (let nl = chunk.indexOf(NEWLINE, start); nl !== -1; nl = chunk.indexOf(NEWLINE, start)) {
        if (nl - start <= this.maxBytes) this.onLine(stripCr(chunk.toString("utf8", start, nl)));
        else {
          this.keep(chunk.subarray(start, nl));
          this.emit();
        }
        start = nl + 1;
      }
    }
    if (start < chunk.length) this.keep(chunk.subarray(start));
  }

  /** The child closed its output: a last line without a newline still counts. */
  end(): void {
    if (this.parts.length > 0 || this.droppedBytes > 0) this.emit();
  }

  private keep(piece: Buffer): void {
    if (piece.length === 0) return;
    // Once a line is cut, the rest of it is only counted.
    if (this.droppedBytes > 0) {
      this.droppedBytes += piece.length;
      return;
    }
    // Cut before a character, not inside one.
    const taken = characterBoundary(piece, this.maxBytes - this.keptBytes);
    if (taken > 0) {
      this.parts.push(Buffer.from(piece.subarray(0, taken)));
      this.keptBytes += taken;
    }
    this.droppedBytes += piece.length - taken;
  }

  private emit(): void {
    let line = Buffer.concat(this.parts, this.keptBytes).toString("utf8");
    // A character cut across two chunks decodes to U+FFFD: drop that half character.
    if (this.droppedBytes > 0) line = `${line.replace(/\uFFFD$/, "")}${truncationMarker(this.droppedBytes)}`;
    else line = stripCr(line);
    this.parts = [];
    this.keptBytes = 0;
    this.droppedBytes = 0;
    this.onLine(line);
  }
}

const stripCr = (line: string) => (line.endsWith("\r") ? line.slice(0, -1) : line);
