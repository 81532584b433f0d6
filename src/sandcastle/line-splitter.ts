// Splits a child's byte stream into lines with bounded memory: a line longer than the cap is cut
// with a marker and the rest of it dropped, so 50 MB without a newline costs 64 KiB, not 50 MB.
// (readline and execa's line splitting both buffer an unterminated line without bound.)
import { isAscii } from "node:buffer";
import { StringDecoder } from "node:string_decoder";

export const MAX_LINE_BYTES = 64 * 1024;

export class LineSplitter {
  private parts: string[] = [];
  private keptBytes = 0;
  private droppedBytes = 0;
  /** Holds a multi-byte character split across two chunks until it is whole. */
  private readonly decoder = new StringDecoder("utf8");

  /**
   * With `onBlock`, the whole lines that lie entirely inside one chunk arrive as one string joined by
   * "\n" (a chunk no longer than the cap cannot hold an over-long line), with their bytes when the chunk
   * is plain ASCII (so they can be shipped without re-encoding); lines that straddle chunks
   * still arrive one by one through `onLine`. Handling a block at once is what keeps the pipeline near
   * readline's speed.
   */
  constructor(
    private readonly onLine: (line: string) => void,
    private readonly maxBytes = MAX_LINE_BYTES,
    private readonly onBlock?: (lines: string, bytes: Buffer | null) => void,
  ) {}

  push(chunk: Buffer): void {
    const text = this.decoder.write(chunk);
    if (this.onBlock && chunk.length <= this.maxBytes) {
      // An all-ASCII chunk decoded to exactly as many characters: character i is byte i, so a block's bytes are a slice.
      return this.pushBlock(text, isAscii(chunk) && text.length === chunk.length ? chunk : null, this.onBlock);
    }
    let start = 0;
    for (;;) {
      const nl = text.indexOf("\n", start);
      if (nl === -1) {
        if (start < text.length) this.keep(text.slice(start));
        return;
      }
      // Fast path: a whole line inside one chunk, well under the cap (1 char ≤ 3 UTF-8 bytes here).
      if (this.parts.length === 0 && this.droppedBytes === 0 && (nl - start) * 3 <= this.maxBytes) {
        this.onLine(stripCr(text.slice(start, nl)));
      } else {
        this.keep(text.slice(start, nl));
        this.emit();
      }
      start = nl + 1;
    }
  }

  /** `bytes`: the chunk itself when it maps one byte to one character, so blocks can also be handed over as bytes. */
  private pushBlock(text: string, bytes: Buffer | null, onBlock: (lines: string, bytes: Buffer | null) => void): void {
    const first = text.indexOf("\n");
    if (first === -1) {
      this.keep(text);
      return;
    }
    let start = 0;
    if (this.parts.length > 0 || this.droppedBytes > 0) {
      this.keep(text.slice(0, first));
      this.emit();
      start = first + 1;
    }
    const last = text.lastIndexOf("\n");
    if (last >= start) onBlock(text.slice(start, last), bytes ? bytes.subarray(start, last) : null);
    if (last + 1 < text.length) this.keep(text.slice(last + 1));
  }

  /** The child closed its output: a last line without a newline still counts. */
  end(): void {
    const rest = this.decoder.end();
    if (rest) this.keep(rest);
    if (this.parts.length > 0 || this.droppedBytes > 0) this.emit();
  }

  private keep(piece: string): void {
    if (piece.length === 0) return;
    const bytes = Buffer.byteLength(piece);
    const room = this.maxBytes - this.keptBytes;
    if (room <= 0) {
      this.droppedBytes += bytes;
      return;
    }
    if (bytes <= room) {
      this.parts.push(piece);
      this.keptBytes += bytes;
      return;
    }
    // Cut on a character boundary at or below the room left.
    const head = Buffer.from(piece).subarray(0, room).toString("utf8").replace(/\uFFFD$/, "");
    const headBytes = Buffer.byteLength(head);
    this.parts.push(head);
    this.keptBytes += headBytes;
    this.droppedBytes += bytes - headBytes;
  }

  private emit(): void {
    let line = stripCr(this.parts.join(""));
    if (this.droppedBytes > 0) line += ` …[line truncated: ${this.droppedBytes} more bytes]`;
    this.parts = [];
    this.keptBytes = 0;
    this.droppedBytes = 0;
    this.onLine(line);
  }
}

const stripCr = (line: string) => (line.endsWith("\r") ? line.slice(0, -1) : line);
