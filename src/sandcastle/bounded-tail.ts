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

  /** Several lines joined by "\n": only the last `size` of them are split out. */
  pushBlock(block: string): void {
    let end = block.length;
    const picked: string[] = [];
    for (;;) {
      const nl = end === 0 ? -1 : block.lastIndexOf("\n", end - 1);
      picked.push(block.slice(nl + 1, end));
      if (nl === -1 || picked.length >= this.size) break;
      end = nl;
    }
    for (let i = picked.length - 1; i >= 0; i--) this.push(picked[i]!);
  }

  lines(): string[] {
    const out: string[] = [];
    const start = (this.next - this.count + this.size) % this.size;
    for (let i = 0; i < this.count; i++) out.push(this.ring[(start + i) % this.size]!);
    return out;
  }
}
