// The CLI as a user installs and meets it: `--version`, a real install on PATH (`npm install -g` of the checkout,
// into a prefix of the test's own, offline) run from outside the checkout, and an older Node (the machine's own,
// e.g. Debian's Node 20) answered with one line naming the Node it needs instead of a stack trace.
import { execFileSync } from "node:child_process";
import { existsSync, readFileSync, realpathSync } from "node:fs";
import { delimiter, dirname, join, resolve } from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { CLI, cliEnv, runCli, runProgram } from "../../helpers/cli.js";
import { redisUrl, tempDir } from "../../helpers/scope.js";

const ROOT = resolve(import.meta.dirname, "../../..");
const PACKAGE = JSON.parse(readFileSync(join(ROOT, "package.json"), "utf8")) as { version: string; engines: { node: string } };
const NEEDED = PACKAGE.engines.node.replace(/^>=\s*/, "");

function nodeVersion(bin: string): string | null {
  try {
    return execFileSync(bin, ["-p", "process.versions.node"], { encoding: "utf8", timeout: 10_000 }).trim();
  } catch {
    return null;
  }
}

const older = (v: string) => {
  const [a = 0, b = 0] = v.split(".").map(Number);
  const [x = 0, y = 0] = NEEDED.split(".").map(Number);
  return a < x || (a === x && b < y);
};

/** A node older than the package needs: SCQ_TEST_OLD_NODE, else the first one on PATH or in /usr/bin, /usr/local/bin. */
function findOldNode(): { bin: string; version: string } | null {
  const candidates = process.env.SCQ_TEST_OLD_NODE
    ? [process.env.SCQ_TEST_OLD_NODE]
    : [...(process.env.PATH ?? "").split(delimiter), "/usr/bin", "/usr/local/bin"].map((d) => join(d, "node"));
  for (const bin of candidates) {
    if (!existsSync(bin) || realpathSync(bin) === realpathSync(process.execPath)) continue;
    const version = nodeVersion(bin);
    // process.execPath, which the refusal names, is the binary's real path.
    if (version !== null && older(version)) return { bin: realpathSync(bin), version };
  }
  return null;
}

const oldNode = findOldNode();
if (oldNode === null) console.warn(`older-Node tests skipped: no node older than ${NEEDED} here (SCQ_TEST_OLD_NODE names one)`);

const refusal = (version: string, bin: string) =>
  `sandcastle-queue: needs Node ${NEEDED} or later, and this is Node ${version} (${bin}): put a newer node first on PATH (in a checkout of sandcastle-queue, \`. scripts/node24.sh\` does)\n`;

describe("--version", () => {
  it("--version and -V print the package's version, exit 0", async () => {
    for (const flag of ["--version", "-V"]) {
      const res = await runCli([flag], cliEnv({}));
      expect(res.code, res.stderr).toBe(0);
      expect(res.stdout).toBe(`${PACKAGE.version}\n`);
      expect(res.stderr).toBe("");
    }
  });
});

describe.skipIf(oldNode === null)("on a Node older than the package needs", () => {
  it("status, enqueue and --version answer one line naming the Node needed and the one that ran, exit 1, no stack trace", async () => {
    const { bin, version } = oldNode!;
    for (const args of [["status"], ["enqueue", "sandcastle-run", "--request", "-"], ["--version"]]) {
      const res = await runProgram(bin, [CLI, ...args], cliEnv({ REDIS_URL: redisUrl() }), { cwd: ROOT });
      expect(res.code).toBe(1);
      expect(res.stderr).toBe(refusal(version, bin));
      expect(res.stdout).toBe("");
    }
  });
});

describe("installed with npm install -g", () => {
  const prefix = tempDir("scq-prefix");
  const elsewhere = tempDir("scq-elsewhere");
  const bin = join(prefix.path, "bin");
  beforeAll(() => {
    // The npm of this machine, run by the node running the tests; offline: a checkout's install needs no registry.
    execFileSync("npm", ["install", "--global", "--prefix", prefix.path, "--offline", "--no-audit", "--no-fund", ROOT], {
      cwd: elsewhere.path,
      env: { ...process.env, PATH: `${dirname(process.execPath)}${delimiter}${process.env.PATH ?? ""}` },
      stdio: ["ignore", "ignore", "pipe"],
      timeout: 120_000,
    });
  }, 180_000);
  afterAll(() => {
    prefix.remove();
    elsewhere.remove();
  });

  it("puts sandcastle-queue on PATH: from another directory it answers --version and status on the tests' Redis", async () => {
    const path = [bin, dirname(process.execPath), "/usr/bin", "/bin"].join(delimiter);
    const version = await runProgram("sandcastle-queue", ["--version"], cliEnv({ PATH: path }), { cwd: elsewhere.path });
    expect(version.code, version.stderr).toBe(0);
    expect(version.stdout).toBe(`${PACKAGE.version}\n`);
    const status = await runProgram("sandcastle-queue", ["status"], cliEnv({ PATH: path, REDIS_URL: redisUrl() }), { cwd: elsewhere.path });
    expect(status.code, status.stderr).toBe(0);
    expect(status.stdout).toMatch(/^redis: redis:\/\/127\.0\.0\.1:\d+/);
    expect(status.stdout).toMatch(/sandcastle-run\s+\d+/);
  });

  it.skipIf(oldNode === null)("run by an older node first on PATH (the shebang's `env node`), it says which Node it needs in one line", async () => {
    const { bin: old, version } = oldNode!;
    const path = [bin, dirname(old), "/usr/bin", "/bin"].join(delimiter);
    const res = await runProgram("sandcastle-queue", ["status"], cliEnv({ PATH: path, REDIS_URL: redisUrl() }), { cwd: elsewhere.path });
    expect(res.code).toBe(1);
    expect(res.stderr).toBe(refusal(version, old));
  });
});

describe("README", () => {
  it("never tells a user to npx the CLI (outside the checkout npx asks the npm registry for a package of that name)", () => {
    for (const doc of ["README.md", "docs/contracts.md"]) expect(readFileSync(join(ROOT, doc), "utf8"), doc).not.toMatch(/npx sandcastle-queue/);
  });
});
