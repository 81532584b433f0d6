// The session log's batcher (session-log.ts): a lone line after quiet goes on the next turn (Nagle's rule, ADR 0053);
// lines that come while a batch is on its way gather and go together as soon as it lands.
import { describe, expect, it } from "vitest";
import { LineBatcher, type LogEntry } from "../../../src/session-log/session-log.js";

/** Past the batcher's next-turn timer (1 ms), well short of its 10 ms wait: timers fire in the order they expire. */
const shortly = () => new Promise((r) => setTimeout(r, 3));

/** A sink whose writes land when the test says. */
function heldSink() {
  const batches: string[][] = [];
  const pending: Array<() => void> = [];
  const sink = (lines: readonly LogEntry[]) => {
    batches.push(lines.map(String));
    return new Promise<void>((resolve) => pending.push(resolve));
  };
  return { sink, batches, land: () => pending.shift()?.() };
}

describe("LineBatcher", () => {
  it("a lone line with nothing on its way goes on the next turn, not after the 10 ms wait", async () => {
    const { sink, batches, land } = heldSink();
    const batcher = new LineBatcher([sink]);
    batcher.write("first line");
    expect(batches).toEqual([]); // not synchronously: what comes in the same read joins it
    batcher.write("same read");
    await shortly();
    expect(batches).toEqual([["first line", "same read"]]);
    land();
    await batcher.close();
  });

  it("lines that come while a batch is on its way gather, and go together once it lands", async () => {
    const { sink, batches, land } = heldSink();
    const batcher = new LineBatcher([sink]);
    batcher.write("a");
    await shortly();
    for (const line of ["b", "c", "d"]) batcher.write(line);
    await shortly();
    expect(batches).toEqual([["a"]]);
    land();
    await shortly();
    expect(batches).toEqual([["a"], ["b", "c", "d"]]);
    land();
    await batcher.close();
  });
});
