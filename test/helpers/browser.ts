// Browser tests on a real Chromium (Debian's `chromium`, or SCQ_TEST_CHROMIUM; playwright-core drives it, no browser
// is downloaded), by the rule container tests follow (optional-tool.ts) with SCQ_TEST_BROWSER: =require (.ci/run sets
// it) makes a missing or unusable Chromium a loud failure; unset, a machine without one skips them with the reason
// printed; =skip skips them.
import { existsSync } from "node:fs";
import { spawnSync } from "node:child_process";
import { skipWithout } from "./optional-tool.js";

export const CHROMIUM = process.env.SCQ_TEST_CHROMIUM ?? "/usr/bin/chromium";

/** Why browser tests cannot run here, or undefined when they can: the binary is there and answers --version. */
function whyNoBrowser(): string | undefined {
  if (!existsSync(CHROMIUM)) return `${CHROMIUM} is missing (apt-get install -y chromium, or SCQ_TEST_CHROMIUM=/path/to/chromium)`;
  const probe = spawnSync(CHROMIUM, ["--version"], { encoding: "utf8", timeout: 30_000 });
  if (probe.status !== 0)
    return `${CHROMIUM} --version failed (${probe.status ?? probe.signal}): ${(probe.stderr ?? "").trim().split("\n").slice(-2).join(" | ")}`;
  return undefined;
}

/** true: describe.skipIf(skipBrowser). Decided at import, once per test file. */
export const skipBrowser = skipWithout("browser tests", "SCQ_TEST_BROWSER", whyNoBrowser);
