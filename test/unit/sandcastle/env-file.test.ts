// The secret env file: what `sh` reads back from it is exactly what was written, whatever the bytes.
import { execFileSync } from "node:child_process";
import { mkdtempSync, rmSync, statSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterEach, describe, expect, it } from "vitest";
import { envFileText, writeEnvFile } from "../../../src/sandcastle/child/env-file.js";

const dirs: string[] = [];
afterEach(() => {
  for (const d of dirs.splice(0)) rmSync(d, { recursive: true, force: true });
});
function dir(): string {
  const d = mkdtempSync(join(tmpdir(), "scq-envfile-"));
  dirs.push(d);
  return d;
}

/** Sources the file in sh and prints each variable NUL-terminated, as the container's shell would see it. */
function readBack(path: string, names: string[]): Record<string, string> {
  const script = `. "$1" || exit 9\nshift\nfor n in "$@"; do eval "printf '%s\\0' \\"\\$$n\\""; done`;
  const out = execFileSync("sh", ["-c", script, "sh", path, ...names], { encoding: "utf8", env: { PATH: process.env.PATH } });
  const values = out.split("\0").slice(0, -1);
  return Object.fromEntries(names.map((n, i) => [n, values[i]!]));
}

describe("secret env file", () => {
  const tricky: Record<string, string> = {
    PLAIN: "sk-ant-api03-abcdef0123456789",
    QUOTES: `it's "quoted" ''`,
    SUBST: "$(touch /tmp/scq-pwned) `id` ${HOME} $HOME",
    NEWLINES: "line1\nline2\n\nexport EVIL=1\n",
    BACKSLASH: "a\\b\\\\c\\n",
    UNICODE: "ключ-🔑-値",
    EMPTY: "",
    SPACES: "  leading and trailing  ",
  };

  it("round-trips every value exactly through sh, running nothing it holds", () => {
    const path = writeEnvFileSync(tricky);
    expect(readBack(path, Object.keys(tricky))).toEqual(tricky);
    expect(readBack(path, ["EVIL"])).toEqual({ EVIL: "" });
  });

  it("is created 0400 and exclusively (a file already there, or a planted symlink, is refused)", async () => {
    const d = dir();
    const path = await writeEnvFile(d, "run-1.env", { A: "b" }, undefined);
    expect(statSync(path).mode & 0o777).toBe(0o400);
    await expect(writeEnvFile(d, "run-1.env", { A: "b" }, undefined)).rejects.toThrow(/EEXIST/);
    writeFileSync(join(d, "target"), "x");
    execFileSync("ln", ["-s", join(d, "target"), join(d, "link.env")]);
    await expect(writeEnvFile(d, "link.env", { A: "b" }, undefined)).rejects.toThrow(/EEXIST|ELOOP/);
  });

  it.skipIf(process.getuid?.() !== 0)("as root, is owned by the container's user (it reads the file through a read-only mount)", async () => {
    const path = await writeEnvFile(dir(), "run-2.env", { A: "b" }, { uid: 1000, gid: 1001 });
    expect(statSync(path)).toMatchObject({ uid: 1000, gid: 1001 });
  });

  it("refuses a name that is not a variable name, and a NUL byte in a value", () => {
    expect(() => envFileText({ "A;rm -rf /": "x" })).toThrow(/not a variable name/);
    expect(() => envFileText({ A: "x\0y" })).toThrow(/NUL/);
  });
});

function writeEnvFileSync(env: Record<string, string>): string {
  const path = join(dir(), "env");
  writeFileSync(path, envFileText(env), { mode: 0o400 });
  return path;
}
