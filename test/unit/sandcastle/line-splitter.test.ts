import { describe, expect, it } from "vitest";
import { LineSplitter } from "../../../src/sandcastle/line-splitter.js";
import { entriesToBuffer, entriesToLines } from "../../../src/sandcastle/session-log.js";

function split(chunks: Buffer[], maxBytes?: number) {
  const lines: string[] = [];
  const blocks: Array<{ text: string; bytes: string | null }> = [];
  const s = new LineSplitter((l) => lines.push(l), maxBytes, (text, bytes) => {
    blocks.push({ text, bytes: bytes ? bytes.toString("utf8") : null });
    lines.push(...text.split("\n"));
  });
  for (const c of chunks) s.push(c);
  s.end();
  return { lines, blocks };
}

describe("LineSplitter", () => {
  it("gives the same lines whatever the chunking, with blocks for whole lines inside a chunk", () => {
    const text = "alpha\nbeta\r\ngamma\n\ndelta";
    const whole = split([Buffer.from(text)]);
    expect(whole.lines).toEqual(["alpha", "beta\r", "gamma", "", "delta"]);
    for (let cut = 1; cut < text.length; cut++) {
      const parts = split([Buffer.from(text.slice(0, cut)), Buffer.from(text.slice(cut))]);
      expect(parts.lines.join("|").replace(/\r/g, ""), `cut at ${cut}`).toBe(whole.lines.join("|").replace(/\r/g, ""));
    }
  });

  it("hands over a block's bytes only when the chunk is plain ASCII, and they match the text", () => {
    const ascii = split([Buffer.from("one\ntwo\nthree\n")]);
    expect(ascii.blocks).toEqual([{ text: "one\ntwo\nthree", bytes: "one\ntwo\nthree" }]);
    const utf8 = split([Buffer.from("ünï\ncödé\n")]);
    expect(utf8.blocks).toEqual([{ text: "ünï\ncödé", bytes: null }]);
    // A multi-byte character split across chunks decodes whole, and its chunk gives no bytes.
    const euro = Buffer.from("a€b\nc\n");
    const splitEuro = split([euro.subarray(0, 2), euro.subarray(2)]);
    expect(splitEuro.lines).toEqual(["a€b", "c"]);
    expect(splitEuro.blocks.every((b) => b.bytes === null || b.bytes === b.text)).toBe(true);
  });

  it("cuts a line over the cap with a marker, and never delivers it as a block", () => {
    const { lines, blocks } = split([Buffer.from("x".repeat(100)), Buffer.from("y".repeat(100) + "\nok\n")], 64);
    expect(lines[0]).toBe(`${"x".repeat(64)} …[line truncated: 136 more bytes]`);
    expect(lines[1]).toBe("ok");
    // A chunk longer than the cap could hide an over-long line: such chunks are split line by line.
    expect(blocks).toEqual([]);
  });
});

describe("log entries", () => {
  it("strings and byte blocks become the same lines", () => {
    const entries = ["a", Buffer.from("b\nc"), "d\ne"];
    expect(entriesToBuffer(entries).toString("utf8")).toBe("a\nb\nc\nd\ne");
    expect(entriesToLines(entries)).toEqual(["a", "b", "c", "d", "e"]);
  });
});
