// Compile + import smoke: the compiled program loads and answers.
import { spawnSync } from "node:child_process";
import { existsSync, readFileSync } from "node:fs";
import { resolve } from "node:path";
import { describe, expect, it } from "vitest";

const dist = (p: string) => resolve(import.meta.dirname, "../../../dist", p);

describe("compile + import smoke", () => {
  it("every entry point of the compiled build imports", () => {
    const modules = ["queues/index.js", "workers/index.js", "src/sandcastle/worker/runner.js", "src/http/server.js"].map(dist);
    const script = `await Promise.all(${JSON.stringify(modules)}.map((m) => import(m))); console.log("ok");`;
    const out = spawnSync(process.execPath, ["--input-type=module", "-e", script], { encoding: "utf8" });
    expect(out.stderr).toBe("");
    expect(out.stdout.trim()).toBe("ok");
  });

  it("the package ships type declarations for what producers import (queues/)", () => {
    const pkg = JSON.parse(readFileSync(resolve(import.meta.dirname, "../../../package.json"), "utf8")) as {
      types: string;
      exports: { ".": { types: string; default: string } };
    };
    expect(pkg.exports["."].types).toBe(pkg.types);
    const types = resolve(import.meta.dirname, "../../..", pkg.exports["."].types);
    expect(existsSync(types)).toBe(true);
    expect(readFileSync(types, "utf8")).toMatch(/export \* from "\.\/sandcastle-run\.js"/);
    expect(readFileSync(dist("queues/sandcastle-run.d.ts"), "utf8")).toMatch(/export declare function enqueueRun\(/);
  });

  it("the child program answers a call without a config with its usage and exit code 2", () => {
    const out = spawnSync(process.execPath, [dist("src/sandcastle/child/main.js")], { encoding: "utf8", env: { PATH: process.env.PATH } });
    expect(out.status).toBe(2);
    expect(out.stdout + out.stderr).toMatch(/usage: main\.js run --config <path>/);
  });
});
