import { describe, expect, it } from "vitest";
import { LineSplitter } from "../../../src/sandcastle/line-splitter.js";
import { entriesToLines, entryPieces } from "../../../src/session-log/session-log.js";

function split(chunks: Buffer[], maxBytes?: number) {
  const lines: string[] = [];
  const blocks: string[] = [];
  const s = new LineSplitter((l) => lines.push(l), maxBytes, (bytes) => {
    const text = bytes.toString("utf8");
    blocks.push(text);
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

  it("hands over the whole lines of a chunk as one slice of its bytes, and decodes straddling lines whole", () => {
    expect(split([Buffer.from("one\ntwo\nthree\n")]).blocks).toEqual(["one\ntwo\nthree"]);
    expect(split([Buffer.from("ünï\ncödé\n")]).blocks).toEqual(["ünï\ncödé"]);
    // A multi-byte character split across chunks is decoded only once its line is whole.
    const euro = Buffer.from("a€b\nc\n");
    for (let cut = 1; cut < euro.length; cut++) {
      expect(split([euro.subarray(0, cut), euro.subarray(cut)]).lines, `cut at ${cut}`).toEqual(["a€b", "c"]);
    }
  });

  it("keeps copies of an unfinished line, not the chunk it came in", () => {
    const lines: string[] = [];
    const s = new LineSplitter((l) => lines.push(l));
    const chunk = Buffer.from("abc");
    s.push(chunk);
    chunk.fill(0x7a);
    s.push(Buffer.from("def\n"));
    expect(lines).toEqual(["abcdef"]);
  });

  it("cuts inside a multi-byte character without leaving half of it", () => {
    const { lines } = split([Buffer.from("ab€€\n")], 4);
    expect(lines).toEqual(["ab …[line truncated: 6 more bytes]"]);
    // The bytes after a cut are never kept, even when a later chunk would fit in the room left.
    const later = split([Buffer.from("ab€"), Buffer.from("c\n")], 4);
    expect(later.lines).toEqual(["ab …[line truncated: 4 more bytes]"]);
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
    const entries = ["a", Buffer.from("b\nc"), "d\ne", "f", Buffer.from("g")];
    expect(Buffer.concat(entryPieces(entries)).toString("utf8")).toBe("a\nb\nc\nd\ne\nf\ng");
    expect(entriesToLines(entries)).toEqual(["a", "b", "c", "d", "e", "f", "g"]);
  });
});
