// Fenced code is cut out of the prose as /```[^\n]*\n[\s\S]*?(?:```|$)/g cuts it (each block becomes a line end),
// found without that pattern: it was retried from every backtick of a line with no line end after it.
import fc from "fast-check";
import { describe, expect, it } from "vitest";
import { readResearch } from "../../../src/margot/reading/reading.js";

const FENCED = /```[^\n]*\n[\s\S]*?(?:```|$)/g;

describe("fenced code", () => {
  it("is cut where the pattern cuts it, on generated texts of backticks, line ends and words", () => {
    const units = ["`", "``", "```", "````", "\n", "\n\n", "a", " ", "js", "We should fix it.", "```ts\n", "\n```"];
    const text = fc.array(fc.constantFrom(...units), { maxLength: 16 }).map((parts) => parts.join(""));
    fc.assert(
      fc.property(text, (body) => {
        const reading = readResearch(body);
        expect(reading.prose).toBe(body.replace(FENCED, "\n"));
        expect(reading.hadFence).toBe(body.match(FENCED) !== null);
      }),
      { numRuns: 3000 },
    );
  });

  it("keeps the text after a closed block and drops an unclosed one to the end", () => {
    const reading = readResearch("Before.\n```js\nconst a = 1;\n```\nAfter the block.\n```\nnever closed");
    expect(reading.prose).toBe("Before.\n\n\nAfter the block.\n\n");
    expect(reading.hadFence).toBe(true);
  });
});
