// The suite's one rule for a tool a machine may lack (podman: containers.ts; Chromium: browser.ts): without
// SCQ_TEST_*, a missing one skips its tests and prints why; SCQ_TEST_*=require, what .ci/run sets, makes it a
// failure. Shown for the browser: the Bull Board browser test file run by a vitest of its own, with a Chromium
// that is not there (on the tests' Redis, so nothing else starts).
import { resolve } from "node:path";
import { describe, expect, it } from "vitest";
import { runProgram } from "../../helpers/cli.js";
import { redisUrl } from "../../helpers/scope.js";

const ROOT = resolve(import.meta.dirname, "../../..");
const MISSING = "/nonexistent/chromium";

/** A vitest of its own on one file, with only these variables (and the tests' Redis). */
function vitest(file: string, extra: Record<string, string>) {
  const env = { PATH: process.env.PATH, HOME: process.env.HOME, NO_COLOR: "1", REDIS_URL: redisUrl(), ...extra };
  return runProgram(process.execPath, [resolve(ROOT, "node_modules/vitest/vitest.mjs"), "run", file], env, { cwd: ROOT, timeoutMs: 120_000 });
}

describe("a machine without Chromium", () => {
  it("skips the browser tests with the reason by default, fails them under SCQ_TEST_BROWSER=require", async () => {
    const file = "test/integration/http/board-browser.test.ts";
    const auto = await vitest(file, { SCQ_TEST_CHROMIUM: MISSING });
    const autoOut = auto.stdout + auto.stderr;
    expect(auto.code, autoOut).toBe(0);
    expect(autoOut).toContain(
      `browser tests skipped: ${MISSING} is missing (apt-get install -y chromium, or SCQ_TEST_CHROMIUM=/path/to/chromium) (SCQ_TEST_BROWSER=require makes this a failure)`,
    );
    expect(autoOut).toMatch(/Tests\s+3 skipped/);

    const required = await vitest(file, { SCQ_TEST_CHROMIUM: MISSING, SCQ_TEST_BROWSER: "require" });
    const requiredOut = required.stdout + required.stderr;
    expect(required.code, requiredOut).toBe(1);
    expect(requiredOut).toContain(`browser tests are required here (SCQ_TEST_BROWSER=require) but cannot run: ${MISSING} is missing`);
  }, 240_000);
});
