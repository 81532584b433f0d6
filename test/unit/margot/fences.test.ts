// Fenced code is cut out of the prose as /```[^\n]*\n[\s\S]*?(?:```|$)/g cuts it (each block becomes a line end),
// found without that pattern: it was retried from every backtick of a line with no line end after it.
import { describe, expect, it } from "vitest";
import { readResearch } from "../../../src/margot/reading.js";

const FENCED = /```[^\n]*\n[\s\S]*?(?:```|$)/g;

/** A small seeded generator, so a failure names a text that can be made again. */
function random(seed: number): () => number {
  let state = seed >>> 0;
  return () => {
    state = (Math.imul(state, 1664525) + 1013904223) >>> 0;
    return state / 2 ** 32;
  };
}

describe("fenced code", () => {
  it("is cut where the pattern cuts it, on generated texts of backticks, line ends and words", () => {
    const next = random(29);
    const units = ["`", "``", "```", "````", "\n", "\n\n", "a", " ", "js", "We should fix it.", "```ts\n", "\n```"];
    for (let n = 0; n < 3000; n++) {
      let text = "";
      const parts = Math.floor(next() * 16);
      for (let p = 0; p < parts; p++) text += units[Math.floor(next() * units.length)]!;
      const reading = readResearch(text);
      expect(reading.prose, JSON.stringify(text)).toBe(text.replace(FENCED, "\n"));
      expect(reading.hadFence, JSON.stringify(text)).toBe(text.match(FENCED) !== null);
    }
  });

  it("keeps the text after a closed block and drops an unclosed one to the end", () => {
    const reading = readResearch("Before.\n```js\nconst a = 1;\n```\nAfter the block.\n```\nnever closed");
    expect(reading.prose).toBe("Before.\n\n\nAfter the block.\n\n");
    expect(reading.hadFence).toBe(true);
  });
});
