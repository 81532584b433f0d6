/** The last `size` lines, never more: a ring buffer so the tail costs O(size) memory. */
export class BoundedTail {
  private readonly ring: string[];
  private next = 0;
  private count = 0;

  constructor(readonly size = 50) {
    this.ring = new Array<string>(size);
  }

  push(line: string): void {
    this.ring[this.next] = line;
    this.next = (this.next + 1) % this.size;
    if (this.count < this.size) this.count += 1;
  }

  /** Several lines as UTF-8 bytes joined by "\n": only the last `size` of them are decoded. */
  pushBlock(block: Buffer): void {
    let from = block.lastIndexOf(0x0a) + 1;
    // (A negative offset would count from the end, hence the guard.)
    for (let n = 1; n < this.size && from > 0; n++) from = from < 2 ? 0 : block.lastIndexOf(0x0a, from - 2) + 1;
    for (const line of block.toString("utf8", from).split("\n")) this.push(line);
  }

  lines(): string[] {
    const out: string[] = [];
    const start = (this.next - this.count + this.size) % this.size;
    for (let i = 0; i < this.count; i++) out.push(this.ring[(start + i) % this.size]!);
    return out;
  }
}
