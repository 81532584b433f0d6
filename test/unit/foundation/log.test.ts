import { spawnSync } from "node:child_process";
import { resolve } from "node:path";
import { describe, expect, it } from "vitest";

const LOG_MODULE = resolve(import.meta.dirname, "../../../dist/src/log.js");

describe("logger", () => {
  it("redacts secret shapes in messages, fields and errors before writing a line", () => {
    const script = `
      const { createLogger } = await import(${JSON.stringify(LOG_MODULE)});
      const log = createLogger("info");
      log.info({ header: "Bearer abcdef0123456789xyz", nested: { k: "GITHUB_TOKEN=ghp_${"a".repeat(36)}" } }, "using sk-ant-api03-${"b".repeat(30)}");
      log.error({ err: new Error("failed with ANTHROPIC_API_KEY=sk-ant-zzzzzzzzzzzz") }, "boom");
    `;
    const out = spawnSync(process.execPath, ["--input-type=module", "-e", script], { encoding: "utf8" });
    expect(out.status).toBe(0);
    const lines = out.stderr.trim().split("\n").map((l) => JSON.parse(l) as Record<string, unknown>);
    expect(lines).toHaveLength(2);
    const text = out.stderr;
    expect(text).not.toMatch(/sk-ant-|ghp_|abcdef0123456789xyz/);
    expect(text).not.toMatch(/[A-Z_]+_(KEY|TOKEN|SECRET|PASSWORD)\s*[=:]/);
    expect(lines[0]!.msg).toMatch(/^using \[REDACTED:anthropic\]/);
  });
});
