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

  lines(): string[] {
    const out: string[] = [];
    const start = (this.next - this.count + this.size) % this.size;
    for (let i = 0; i < this.count; i++) out.push(this.ring[(start + i) % this.size]!);
    return out;
  }
}
