import { existsSync, mkdirSync, readdirSync, readFileSync, statSync, symlinkSync, utimesSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { afterEach, beforeEach, describe, expect, it } from "vitest";
import { writeChildConfig } from "../../../src/sandcastle/worker/config-file.js";
import { SandcastleRunRequest } from "../../../src/sandcastle/contract.js";
import { Deployment, DEPLOYMENT_FILE, UNMARKED_STALE_MS } from "../../../src/sandcastle/deployment.js";
import { createRunDir, removeRunDir, runDirPath, sweepRunDirs } from "../../../src/sandcastle/worker/run-dir.js";
import { tempDir } from "../../helpers/scope.js";

let dir: ReturnType<typeof tempDir>;
beforeEach(() => {
  dir = tempDir("scqc");
});
afterEach(() => dir.remove());

const request = SandcastleRunRequest.parse({
  session_id: "s",
  agent: "script",
  sandbox: "noSandbox",
  dry_run: true,
  prompt_template_dir: "/t",
  branch: "b",
  repo_workdir: "/r",
  env_manifest_name: "m",
});
const old = (path: string) => utimesSync(path, new Date(Date.now() - 3600_000), new Date(Date.now() - 3600_000));
const ancient = (path: string) => utimesSync(path, new Date(Date.now() - UNMARKED_STALE_MS - 60_000), new Date(Date.now() - UNMARKED_STALE_MS - 60_000));
const OURS = "{scq}@redis://127.0.0.1:6379/";
/** Our deployment, whose Redis holds the jobs of `known` runs (what marks an unmarked directory as ours). */
const ours = (known: readonly string[] = []) => new Deployment(OURS, async (id) => known.includes(id));

describe("run directory", () => {
  it("is created 0700 whatever the umask, and never where something (a planted symlink included) already is", async () => {
    const previous = process.umask(0o022);
    try {
      const path = await createRunDir(dir.path, "run-a", OURS);
      expect(statSync(path).mode & 0o777).toBe(0o700);
    } finally {
      process.umask(previous);
    }
    await expect(createRunDir(dir.path, "run-a", OURS)).rejects.toThrow(/EEXIST/);
    mkdirSync(join(dir.path, "elsewhere"));
    symlinkSync(join(dir.path, "elsewhere"), runDirPath(dir.path, "run-b"));
    await expect(createRunDir(dir.path, "run-b", OURS)).rejects.toThrow(/EEXIST/);
  });

  it("holds the config file 0600, created exclusively; removing the run directory removes it", async () => {
    const runDir = await createRunDir(dir.path, "run-a", OURS);
    const path = await writeChildConfig(runDir, { version: 1, run_id: "run-a", request, env: { K: "v" } });
    expect(statSync(path).mode & 0o777).toBe(0o600);
    await expect(writeChildConfig(runDir, { version: 1, run_id: "run-a", request, env: {} })).rejects.toThrow(/EEXIST/);
    await removeRunDir(dir.path, "run-a");
    expect(existsSync(runDir)).toBe(false);
  });

  it("is marked with the deployment that made it", async () => {
    const path = await createRunDir(dir.path, "run-a", OURS);
    expect(readFileSync(join(path, DEPLOYMENT_FILE), "utf8")).toBe(`${OURS}\n`);
    expect(await ours().ownerOf(path, "run-a")).toBe("ours");
    expect(await new Deployment("{other}@redis://127.0.0.1:6379/", async () => true).ownerOf(path, "run-a")).toBe("another");
  });

  it("the sweep removes this deployment's directories of runs that are not active, whatever their age", async () => {
    for (const id of ["run-dead", "run-live"]) writeFileSync(join(await createRunDir(dir.path, id, OURS), "config.json"), "{}");
    old(runDirPath(dir.path, "run-dead"));
    const fresh = await createRunDir(dir.path, "run-fresh-dead", OURS);
    writeFileSync(join(dir.path, "unrelated.json"), "{}");
    const swept = await sweepRunDirs(dir.path, ours(), async () => new Set(["run-live"]));
    expect(swept.sort()).toEqual(["run-dead", "run-fresh-dead"]);
    expect(existsSync(fresh)).toBe(false);
    expect(readdirSync(dir.path).sort()).toEqual(["scq-run-run-live", "unrelated.json"]);
  });

  it("the sweep never touches another deployment's directories, whatever their age", async () => {
    const theirs = await createRunDir(dir.path, "run-theirs", "{other}@redis://127.0.0.1:6379/");
    const theirsOld = await createRunDir(dir.path, "run-theirs-old", "{scq}@redis://10.0.0.9:6379/");
    ancient(theirsOld);
    expect(await sweepRunDirs(dir.path, ours(["run-theirs"]), async () => new Set())).toEqual([]);
    expect([theirs, theirsOld].map(existsSync)).toEqual([true, true]);
  });

  it("unmarked ones (an older version's) and legacy config files: removed when this deployment's Redis holds the run, or once they outlived any run; else left", async () => {
    const unmarked = (id: string) => {
      mkdirSync(runDirPath(dir.path, id), { mode: 0o700 });
      return runDirPath(dir.path, id);
    };
    unmarked("run-known");
    const young = unmarked("run-young-unknown");
    ancient(unmarked("run-ancient-unknown"));
    writeFileSync(join(dir.path, "sandcastle-run-legacy-known.json"), "{}");
    writeFileSync(join(dir.path, "sandcastle-run-legacy-young.json"), "{}");
    const swept = await sweepRunDirs(dir.path, ours(["run-known", "run-legacy-known"]), async () => new Set());
    expect(swept.sort()).toEqual(["run-ancient-unknown", "run-known", "run-legacy-known"]);
    expect(readdirSync(dir.path).sort()).toEqual(["sandcastle-run-legacy-young.json", "scq-run-run-young-unknown"]);
    expect(existsSync(young)).toBe(true);
  });

  it("the sweep lists directories before it asks which runs are active: a run starting meanwhile keeps its directory", async () => {
    await createRunDir(dir.path, "run-dead", OURS);
    const swept = await sweepRunDirs(dir.path, ours(), async () => {
      // A run that became active and made its directory after the listing.
      await createRunDir(dir.path, "run-new", OURS);
      return new Set(["run-new"]);
    });
    expect(swept).toEqual(["run-dead"]);
    expect(readdirSync(dir.path)).toEqual(["scq-run-run-new"]);
  });
});
