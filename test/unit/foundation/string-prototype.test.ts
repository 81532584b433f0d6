// src/redis/ioredis.ts: loading ioredis leaves String.prototype in V8's dictionary mode (slow string methods in the
// whole process); the module that loads it for us turns it fast again. Read with V8's own test intrinsic.
import { spawnSync } from "node:child_process";
import { resolve } from "node:path";
import { describe, expect, it } from "vitest";

const root = resolve(import.meta.dirname, "../../..");

function stringPrototypeFastAfter(modules: string[]): boolean {
  const script = `for (const m of ${JSON.stringify(modules)}) await import(m); console.log(%HasFastProperties(String.prototype));`;
  const out = spawnSync(process.execPath, ["--allow-natives-syntax", "--input-type=module", "-e", script], { cwd: root, encoding: "utf8" });
  expect(out.stderr).toBe("");
  return JSON.parse(out.stdout.trim()) as boolean;
}

describe("String.prototype after loading ioredis", () => {
  it("is slow after ioredis alone (the V8 behaviour worked around; if this fails, remove the workaround and ADR 0025's repair)", () => {
    expect(stringPrototypeFastAfter(["ioredis"])).toBe(false);
  });

  it("is fast again once the project's Redis module is loaded", () => {
    expect(stringPrototypeFastAfter(["ioredis", resolve(root, "dist/src/redis/connect.js")])).toBe(true);
  });

  it("is fast in the service's whole module graph (CLI runtime, workers, HTTP side)", () => {
    const graph = ["src/cli/runtime.js", "workers/index.js", "src/cli/commands/service.js"].map((p) => resolve(root, "dist", p));
    expect(stringPrototypeFastAfter(graph)).toBe(true);
  });
});
