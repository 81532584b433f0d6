import { existsSync, mkdirSync, readdirSync, statSync, symlinkSync, utimesSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { afterEach, beforeEach, describe, expect, it } from "vitest";
import { writeChildConfig } from "../../../src/sandcastle/config-file.js";
import { SandcastleRunRequest } from "../../../src/sandcastle/contract.js";
import { createRunDir, removeRunDir, runDirPath, sweepRunDirs } from "../../../src/sandcastle/run-dir.js";
import { tempDir } from "../../helpers/scope.js";

let dir: ReturnType<typeof tempDir>;
beforeEach(() => {
  dir = tempDir("scqc");
});
afterEach(() => dir.remove());

const request = SandcastleRunRequest.parse({ session_id: "s", agent: "script", sandbox: "noSandbox", dry_run: true, prompt_template_dir: "/t", branch: "b", repo_workdir: "/r", env_manifest_name: "m" });
const old = (path: string) => utimesSync(path, new Date(Date.now() - 3600_000), new Date(Date.now() - 3600_000));

describe("run directory", () => {
  it("is created 0700 whatever the umask, and never where something (a planted symlink included) already is", async () => {
    const previous = process.umask(0o022);
    try {
      const path = await createRunDir(dir.path, "run-a");
      expect(statSync(path).mode & 0o777).toBe(0o700);
    } finally {
      process.umask(previous);
    }
    await expect(createRunDir(dir.path, "run-a")).rejects.toThrow(/EEXIST/);
    mkdirSync(join(dir.path, "elsewhere"));
    symlinkSync(join(dir.path, "elsewhere"), runDirPath(dir.path, "run-b"));
    await expect(createRunDir(dir.path, "run-b")).rejects.toThrow(/EEXIST/);
  });

  it("holds the config file 0600, created exclusively; removing the run directory removes it", async () => {
    const runDir = await createRunDir(dir.path, "run-a");
    const path = await writeChildConfig(runDir, { version: 1, run_id: "run-a", request, env: { K: "v" } });
    expect(statSync(path).mode & 0o777).toBe(0o600);
    await expect(writeChildConfig(runDir, { version: 1, run_id: "run-a", request, env: {} })).rejects.toThrow(/EEXIST/);
    await removeRunDir(dir.path, "run-a");
    expect(existsSync(runDir)).toBe(false);
  });

  it("the sweep removes directories and legacy config files of runs that are not active, whatever their age", async () => {
    for (const id of ["run-dead", "run-live"]) writeFileSync(join(await createRunDir(dir.path, id), "config.json"), "{}");
    old(runDirPath(dir.path, "run-dead"));
    const fresh = await createRunDir(dir.path, "run-fresh-dead");
    writeFileSync(join(dir.path, "sandcastle-run-legacy.json"), "{}");
    writeFileSync(join(dir.path, "unrelated.json"), "{}");
    const swept = await sweepRunDirs(dir.path, async () => new Set(["run-live"]));
    expect(swept.sort()).toEqual(["run-dead", "run-fresh-dead", "run-legacy"]);
    expect(existsSync(fresh)).toBe(false);
    expect(readdirSync(dir.path).sort()).toEqual(["scq-run-run-live", "unrelated.json"]);
  });

  it("the sweep lists directories before it asks which runs are active: a run starting meanwhile keeps its directory", async () => {
    await createRunDir(dir.path, "run-dead");
    const swept = await sweepRunDirs(dir.path, async () => {
      // A run that became active and made its directory after the listing.
      await createRunDir(dir.path, "run-new");
      return new Set(["run-new"]);
    });
    expect(swept).toEqual(["run-dead"]);
    expect(readdirSync(dir.path)).toEqual(["scq-run-run-new"]);
  });
});
