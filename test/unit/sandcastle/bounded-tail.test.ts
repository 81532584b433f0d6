import { describe, expect, it } from "vitest";
import { BoundedTail } from "../../../src/sandcastle/bounded-tail.js";

describe("BoundedTail", () => {
  it("keeps the same last lines whether they come one by one or in blocks of bytes", () => {
    const words = ["", "a", "bb", "ünï", "€"];
    let seed = 3;
    const next = (n: number) => ((seed = (Math.imul(seed, 1103515245) + 12345) >>> 0) >>> 8) % n;
    for (let round = 0; round < 500; round++) {
      const size = 1 + next(6);
      const byLine = new BoundedTail(size);
      const byBlock = new BoundedTail(size);
      for (let b = 0; b < 1 + next(4); b++) {
        const lines = Array.from({ length: 1 + next(9) }, () => words[next(words.length)]!);
        for (const line of lines) byLine.push(line);
        if (next(3) === 0) for (const line of lines) byBlock.push(line);
        else byBlock.pushBlock(Buffer.from(lines.join("\n")));
      }
      expect(byBlock.lines()).toEqual(byLine.lines());
      expect(byLine.lines().length).toBeLessThanOrEqual(size);
    }
  });
});
