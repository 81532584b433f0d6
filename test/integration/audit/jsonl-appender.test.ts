// Append-only JSONL under concurrent writers and after a torn tail.
import { spawn } from "node:child_process";
import { appendFileSync, readFileSync } from "node:fs";
import { join, resolve } from "node:path";
import { afterEach, beforeEach, describe, expect, it } from "vitest";
import { JsonlAppender, parseJsonl } from "../../../src/audit/jsonl-appender.js";
import { tempDir } from "../../helpers/scope.js";

const WRITER = resolve(import.meta.dirname, "../../fixtures/children/append-rows.mjs");
const MODULE = resolve(import.meta.dirname, "../../../dist/src/audit/jsonl-appender.js");
let dir: ReturnType<typeof tempDir>;
beforeEach(() => {
  dir = tempDir("scqj");
});
afterEach(() => dir.remove());

function writer(file: string, name: string, rows: number, size: number): Promise<number | null> {
  return new Promise((res) => {
    const child = spawn(process.execPath, [WRITER, MODULE, file, name, String(rows), String(size)], { stdio: "ignore" });
    child.once("exit", (code) => res(code));
  });
}

describe("JsonlAppender", () => {
  it("two processes × 2,000 rows of 5 KiB: every line is one whole row", async () => {
    const file = join(dir.path, "audit.jsonl");
    expect(await Promise.all([writer(file, "a", 2000, 5000), writer(file, "b", 2000, 5000)])).toEqual([0, 0]);
    const lines = readFileSync(file, "utf8").split("\n").filter(Boolean);
    expect(lines).toHaveLength(4000);
    const rows = lines.map((l) => JSON.parse(l) as { writer: string; i: number });
    for (const w of ["a", "b"]) expect(rows.filter((r) => r.writer === w).map((r) => r.i)).toEqual([...Array(2000).keys()]);
  });

  it("after a torn tail (a writer killed mid-line), the next row starts on a fresh line and readers skip only the torn one", async () => {
    const file = join(dir.path, "audit.jsonl");
    appendFileSync(file, `${JSON.stringify({ ok: 1 })}\n{"torn": tr`);
    const appender = new JsonlAppender(file);
    await appender.append({ ok: 2 });
    await appender.close();
    expect(parseJsonl(readFileSync(file, "utf8"))).toEqual([{ ok: 1 }, { ok: 2 }]);
  });

  it("a write that fails (ENOSPC: /dev/full) rejects, so the caller does not report success", async () => {
    const appender = new JsonlAppender("/dev/full");
    await expect(appender.append({ x: 1 })).rejects.toThrow(/ENOSPC/);
    await appender.close().catch(() => {});
  });

  it("an append resolves with its row in the file, however the appends of many turns meet the fdatasyncs; close waits for the rest", async () => {
    const file = join(dir.path, "ledger.jsonl");
    const appender = new JsonlAppender(file);
    const settled: Promise<void>[] = [];
    for (let turn = 0; turn < 40; turn++) {
      for (let i = 0; i < 5; i++) {
        const row = { turn, i };
        settled.push(
          appender.append(row).then(() => {
            expect(parseJsonl(readFileSync(file, "utf8"))).toContainEqual(row);
          }),
        );
      }
      await new Promise((r) => setImmediate(r));
    }
    const last = { turn: 40, i: 0 };
    void appender.append(last);
    await appender.close();
    await Promise.all(settled);
    expect(parseJsonl(readFileSync(file, "utf8"))).toHaveLength(201);
  });
});
