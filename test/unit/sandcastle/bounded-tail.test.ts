import fc from "fast-check";
import { describe, expect, it } from "vitest";
import { BoundedTail } from "../../../src/sandcastle/worker/bounded-tail.js";

const words = fc.constantFrom("", "a", "bb", "ünï", "€");
// A block of lines, pushed either line by line or as one buffer (about one block in three line by line).
const block = fc.record({ lines: fc.array(words, { minLength: 1, maxLength: 9, size: "max" }), oneByOne: fc.boolean() });

describe("BoundedTail", () => {
  it("keeps the same last lines whether they come one by one or in blocks of bytes", () => {
    fc.assert(
      fc.property(fc.integer({ min: 1, max: 6 }), fc.array(block, { minLength: 1, maxLength: 4, size: "max" }), (size, blocks) => {
        const byLine = new BoundedTail(size);
        const byBlock = new BoundedTail(size);
        for (const { lines, oneByOne } of blocks) {
          for (const line of lines) byLine.push(line);
          if (oneByOne) for (const line of lines) byBlock.push(line);
          else byBlock.pushBlock(Buffer.from(lines.join("\n")));
        }
        expect(byBlock.lines()).toEqual(byLine.lines());
        expect(byLine.lines().length).toBeLessThanOrEqual(size);
      }),
      { numRuns: 500 },
    );
  });
});
