// The hash-chained audit log and `audit verify`: edits, deletions, reordering and truncation are named;
// rotation and concurrent writers in several processes keep one intact chain.
import { spawn } from "node:child_process";
import { appendFileSync, readFileSync, renameSync, writeFileSync } from "node:fs";
import { join, resolve } from "node:path";
import { afterEach, beforeEach, describe, expect, it } from "vitest";
import { AuditLog } from "../../../src/audit/audit-log.js";
import { GENESIS, rowHash } from "../../../src/audit/chain.js";
import { createRedactor } from "../../../src/redact/index.js";
import { cliEnv, runCli } from "../../helpers/cli.js";
import { tempDir } from "../../helpers/scope.js";

const WRITER = resolve(import.meta.dirname, "../../fixtures/children/audit-rows.mjs");
const DIST = resolve(import.meta.dirname, "../../../dist");
let dir: ReturnType<typeof tempDir>;
let path: string;
beforeEach(() => {
  dir = tempDir("scqa");
  path = join(dir.path, "audit.jsonl");
});
afterEach(() => dir.remove());

async function write(file: string, runIds: readonly string[]): Promise<void> {
  const audit = new AuditLog(file, createRedactor());
  for (const run_id of runIds) await audit.emit({ type: "sandcastle_run_skipped", run_id, skip_reason: "concurrency_cap" });
  await audit.close();
}

async function verify(...paths: string[]): Promise<{ code: number | null; out: string }> {
  const res = await runCli(["audit", "verify", ...paths], cliEnv({ AUDIT_LOG_PATH: path, SCQ_DATA_DIR: dir.path }));
  return { code: res.code, out: res.stdout + res.stderr };
}

const lines = () => readFileSync(path, "utf8").split("\n").filter(Boolean);
const setLines = (l: readonly string[]) => writeFileSync(path, `${l.join("\n")}\n`);

describe("audit rows are redacted", () => {
  it("a secret in any string, nested ones included, is masked; a row with none is written as given", async () => {
    const audit = new AuditLog(path, createRedactor());
    await audit.emit({
      type: "sandcastle_run_started",
      run_id: "r1",
      agent: "script",
      sandbox: "none",
      branch: "agent/ghp_0123456789abcdefghijklmnopqrstuvwxyzAB",
    });
    await audit.emit({
      type: "sandcastle_run_failed",
      run_id: "r2",
      failure_reason: "env_unresolved",
      exit_code: null,
      missing_vars: ["PLAIN", "DB_PASSWORD=hunter2hunter2"],
    });
    await audit.emit({ type: "sandcastle_run_started", run_id: "r3", agent: "script", sandbox: "none", branch: "agent/plain-branch" });
    await audit.close();
    const rows = lines().map((l) => JSON.parse(l) as Record<string, unknown>);
    expect(rows[0]!.branch).toBe("agent/[REDACTED:github]");
    expect(JSON.stringify(rows[1])).not.toContain("hunter2");
    expect(rows[1]!.missing_vars).toEqual(["PLAIN", "***=[REDACTED]"]);
    expect(rows[2]).toMatchObject({ run_id: "r3", agent: "script", sandbox: "none", branch: "agent/plain-branch" });
  });
});

describe("the audit hash chain", () => {
  it("each row carries seq and the hash of the row before it; verify (AUDIT_LOG_PATH by default) says intact, exit 0", async () => {
    await write(path, ["r1", "r2", "r3"]);
    const rows = lines().map((l) => JSON.parse(l) as { seq: number; prev: string; run_id: string });
    expect(rows.map((r) => [r.seq, r.run_id])).toEqual([[1, "r1"], [2, "r2"], [3, "r3"]]);
    expect(rows[0]!.prev).toBe(GENESIS);
    expect(rows[1]!.prev).toBe(rowHash(lines()[0]!));
    expect(rows[2]!.prev).toBe(rowHash(lines()[1]!));
    expect(await verify()).toEqual({ code: 0, out: "ok: 3 rows, chain intact\n" });
    const json = await runCli(["audit", "verify", "--json", path], cliEnv({}));
    expect(JSON.parse(json.stdout)).toEqual({ ok: true, rows: 3, problem: null, notes: [], last: { seq: 3, hash: rowHash(lines()[2]!) } });
  });

  it("an edited row is named (line and seq), exit 1", async () => {
    await write(path, ["r1", "r2", "r3", "r4"]);
    const l = lines();
    l[1] = l[1]!.replace('"r2"', '"rX"');
    setLines(l);
    const res = await verify(path);
    expect(res.code).toBe(1);
    expect(res.out).toContain("line 2 (seq 2) no longer matches the hash that line 3");
    expect(res.out).toMatch(/BROKEN: .*audit\.jsonl: .*it was changed/);
  });

  it("an edit to the last row is caught by the chain head", async () => {
    await write(path, ["r1", "r2"]);
    const l = lines();
    l[1] = l[1]!.replace('"concurrency_cap"', '"kill_switch_active"');
    setLines(l);
    const res = await verify(path);
    expect(res.code).toBe(1);
    expect(res.out).toContain("line 2 (seq 2) does not match the chain head: it was changed");
  });

  it("a removed row is named, exit 1", async () => {
    await write(path, ["r1", "r2", "r3", "r4"]);
    setLines(lines().filter((_, i) => i !== 1));
    const res = await verify(path);
    expect(res.code).toBe(1);
    expect(res.out).toContain("row seq 2 was removed before line 2 (after line 1)");
  });

  it("reordered rows are named, exit 1", async () => {
    await write(path, ["r1", "r2", "r3", "r4"]);
    const l = lines();
    setLines([l[0]!, l[2]!, l[1]!, l[3]!]);
    const res = await verify(path);
    expect(res.code).toBe(1);
    // Seq 3 right after seq 1: seq 2 is missing there; it shows up later, out of order.
    expect(res.out).toContain("row seq 2 was removed before line 2");
    setLines([l[0]!, l[1]!, l[3]!, l[2]!]);
    expect((await verify(path)).out).toContain("row seq 3 was removed before line 3");
    setLines([l[0]!, l[1]!, l[1]!, l[2]!, l[3]!]);
    expect((await verify(path)).out).toContain("line 3 (seq 2) comes after seq 2 (line 2): rows were reordered or duplicated");
  });

  it("truncation — whole rows off the end, or mid-row — is caught by the chain head, exit 1", async () => {
    await write(path, ["r1", "r2", "r3", "r4"]);
    const whole = readFileSync(path, "utf8");
    setLines(lines().slice(0, 2));
    const res = await verify(path);
    expect(res.code).toBe(1);
    expect(res.out).toContain("rows seq 3–4 were removed from the end (the chain head says 4 rows were written)");
    writeFileSync(path, whole.slice(0, whole.length - 20));
    const torn = await verify(path);
    expect(torn.code).toBe(1);
    expect(torn.out).toContain("row seq 4 was removed from the end");
    writeFileSync(path, "");
    expect((await verify(path)).out).toContain("rows seq 1–4 were removed from the end");
  });

  it("rotation: the first row of the new file chains to the last row of the rotated one, whichever process writes it", async () => {
    const audit = new AuditLog(path, createRedactor());
    await audit.emit({ type: "sandcastle_run_skipped", run_id: "r1", skip_reason: "concurrency_cap" });
    await audit.emit({ type: "sandcastle_run_skipped", run_id: "r2", skip_reason: "concurrency_cap" });
    const rotated = `${path}.1`;
    renameSync(path, rotated);
    // The same writer notices the rename and starts the new file; another process continues it.
    await audit.emit({ type: "sandcastle_run_skipped", run_id: "r3", skip_reason: "concurrency_cap" });
    await audit.close();
    await write(path, ["r4"]);
    const first = JSON.parse(lines()[0]!) as { seq: number; prev: string };
    const oldLines = readFileSync(rotated, "utf8").split("\n").filter(Boolean);
    expect(first).toMatchObject({ seq: 3, prev: rowHash(oldLines.at(-1)!) });
    expect(await verify(rotated, path)).toEqual({ code: 0, out: "ok: 4 rows, chain intact\n" });
    const alone = await verify(path);
    expect(alone.code).toBe(0);
    expect(alone.out).toContain("starts at seq 3: it continues an earlier file");
    // A row removed at the seam is still named.
    writeFileSync(rotated, `${oldLines[0]}\n`);
    const seam = await verify(rotated, path);
    expect(seam.code).toBe(1);
    expect(seam.out).toContain("row seq 2 was removed before line 1 (after");
  });

  it("four processes writing at once: one chain, every row once, seq 1..400", async () => {
    const runs = ["a", "b", "c", "d"].map(
      (name) =>
        new Promise<number | null>((res) => {
          const child = spawn(process.execPath, [WRITER, DIST, path, name, "100"], { stdio: "ignore" });
          child.once("exit", (code) => res(code));
        }),
    );
    expect(await Promise.all(runs)).toEqual([0, 0, 0, 0]);
    const rows = lines().map((l) => JSON.parse(l) as { seq: number; run_id: string });
    expect(rows.map((r) => r.seq)).toEqual(Array.from({ length: 400 }, (_, i) => i + 1));
    for (const w of ["a", "b", "c", "d"])
      expect(rows.filter((r) => r.run_id.startsWith(`${w}-`)).map((r) => r.run_id)).toEqual(Array.from({ length: 100 }, (_, i) => `${w}-${i}`));
    expect(await verify(path)).toEqual({ code: 0, out: "ok: 400 rows, chain intact\n" });
  });

  it("a torn row left by a writer killed mid-write: the next row chains past it, verify notes it and passes", async () => {
    await write(path, ["r1"]);
    appendFileSync(path, '{"ts":"2026-01-01T00:00:00.000Z","type":"sandcastle_run_ski');
    await write(path, ["r2"]);
    const res = await verify(path);
    expect(res.code).toBe(0);
    expect(res.out).toContain("line 2 is a torn write");
    expect(res.out).toContain("ok: 2 rows, chain intact");
  });

  it("a writer that stays open notices rows others left behind: a torn one, and a whole next row whose writer died before moving the head (adopted)", async () => {
    const audit = new AuditLog(path, createRedactor());
    const emit = (run_id: string) => audit.emit({ type: "sandcastle_run_skipped", run_id, skip_reason: "concurrency_cap" });
    await emit("r1");
    appendFileSync(path, '{"ts":"2026-01-01T00:00:00.000Z","type":"sandcastle_run_ski');
    await emit("r2");
    // The next link, longer than the first tail read, written by a writer killed before it moved the head.
    const second = lines().at(-1);
    const orphan = JSON.stringify({
      ts: "2026-01-01T00:00:01.000Z",
      type: "sandcastle_run_skipped",
      run_id: `r3-${"x".repeat(6000)}`,
      skip_reason: "concurrency_cap",
      seq: 3,
      prev: rowHash(second!),
    });
    appendFileSync(path, `${orphan}\n`);
    await emit("r4");
    await audit.close();
    const rows = lines().flatMap((l) => {
      try {
        return [JSON.parse(l) as { seq: number; prev: string; run_id: string }];
      } catch {
        return [];
      }
    });
    expect(rows.map((r) => [r.run_id.slice(0, 2), r.seq])).toEqual([
      ["r1", 1],
      ["r2", 2],
      ["r3", 3],
      ["r4", 4],
    ]);
    expect(rows[3]!.prev).toBe(rowHash(orphan));
    const res = await verify(path);
    expect(res.code).toBe(0);
    expect(res.out).toContain("ok: 4 rows, chain intact");
  });
});
