// Splits a child's byte stream into lines with bounded memory: a line longer than the cap is cut
// with a marker and the rest of it dropped, so 50 MB without a newline costs 64 KiB, not 50 MB.
// (readline and execa's line splitting both buffer an unterminated line without bound.)

export const MAX_LINE_BYTES = 64 * 1024;
const NL = 0x0a;

export class LineSplitter {
  private parts: Buffer[] = [];
  private kept = 0;
  private dropped = 0;
  private readonly decoder = new TextDecoder("utf-8");

  constructor(
    private readonly onLine: (line: string) => void,
    private readonly maxBytes = MAX_LINE_BYTES,
  ) {}

  push(chunk: Buffer): void {
    let start = 0;
    for (;;) {
      const nl = chunk.indexOf(NL, start);
      if (nl === -1) {
        this.keep(chunk.subarray(start));
        return;
      }
      this.keep(chunk.subarray(start, nl));
      this.emit();
      start = nl + 1;
    }
  }

  /** The child closed its output: a last line without a newline still counts. */
  end(): void {
    if (this.kept > 0 || this.dropped > 0) this.emit();
  }

  private keep(bytes: Buffer): void {
    if (bytes.length === 0) return;
    const room = this.maxBytes - this.kept;
    if (room <= 0) {
      this.dropped += bytes.length;
      return;
    }
    const take = bytes.length <= room ? bytes : bytes.subarray(0, room);
    // Copy: the caller's chunk buffer may be reused after we return.
    this.parts.push(Buffer.from(take));
    this.kept += take.length;
    this.dropped += bytes.length - take.length;
  }

  private emit(): void {
    const buf = this.parts.length === 1 ? this.parts[0]! : Buffer.concat(this.parts, this.kept);
    let line = this.decoder.decode(buf);
    if (line.endsWith("\r")) line = line.slice(0, -1);
    if (this.dropped > 0) line += ` …[line truncated: ${this.dropped} more bytes]`;
    this.parts = [];
    this.kept = 0;
    this.dropped = 0;
    this.onLine(line);
  }
}
