// The run container's main process (container-main/main.mts), started wrongly: its usage line reaches a piped stderr
// whole before it exits 2 (the engine keeps that stderr; a line cut off there would say nothing).
import { spawnSync } from "node:child_process";
import { resolve } from "node:path";
import { describe, expect, it } from "vitest";

const MAIN = resolve(import.meta.dirname, "../../../dist/src/sandcastle/container-main/main.mjs");

describe("the container's main process", () => {
  it.each([[["--bogus"]], [["--seconds=abc"]], [["--seconds=5", "--egress-port=9"]]])("%j: exit 2 with its usage line on a piped stderr", (args) => {
    const result = spawnSync(process.execPath, [MAIN, ...args], { encoding: "utf8", stdio: ["ignore", "pipe", "pipe"], timeout: 10_000 });
    expect(result.status).toBe(2);
    expect(result.stderr).toBe("usage: main.mjs --seconds=<n> [--exec=<socket>] [--egress-port=<port> --egress-socket=<socket>]\n");
    expect(result.stdout).toBe("");
  });
});
