import { mkdirSync, readdirSync, statSync, symlinkSync, utimesSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { afterEach, beforeEach, describe, expect, it } from "vitest";
import { sweepChildTempDirs } from "../../../src/sandcastle/child-leftovers.js";
import { sweepChildConfigs, writeChildConfig } from "../../../src/sandcastle/config-file.js";
import { SandcastleRunRequest } from "../../../src/sandcastle/contract.js";
import { tempDir } from "../../helpers/scope.js";

let dir: ReturnType<typeof tempDir>;
beforeEach(() => {
  dir = tempDir("scqc");
});
afterEach(() => dir.remove());

const request = SandcastleRunRequest.parse({ session_id: "s", agent: "script", sandbox: "noSandbox", dry_run: true, prompt_template_dir: "/t", branch: "b", repo_workdir: "/r", env_manifest_name: "m" });
const old = (path: string) => utimesSync(path, new Date(Date.now() - 3600_000), new Date(Date.now() - 3600_000));

describe("child config file", () => {
  it("is created 0600 and exclusively: an existing file (or a planted symlink) is never written through", async () => {
    const path = await writeChildConfig(dir.path, { version: 1, run_id: "run-a", request, env: { K: "v" } });
    expect(statSync(path).mode & 0o777).toBe(0o600);
    await expect(writeChildConfig(dir.path, { version: 1, run_id: "run-a", request, env: {} })).rejects.toThrow(/EEXIST/);
    symlinkSync(join(dir.path, "elsewhere"), join(dir.path, "sandcastle-run-b.json"));
    await expect(writeChildConfig(dir.path, { version: 1, run_id: "run-b", request, env: {} })).rejects.toThrow(/EEXIST/);
    expect(readdirSync(dir.path)).not.toContain("elsewhere");
  });

  it("the start-up sweep removes leftovers of runs that are not active, and keeps active and fresh ones", async () => {
    for (const id of ["run-dead", "run-live", "run-fresh"]) writeFileSync(join(dir.path, `sandcastle-${id}.json`), "{}");
    writeFileSync(join(dir.path, "unrelated.json"), "{}");
    for (const id of ["run-dead", "run-live"]) old(join(dir.path, `sandcastle-${id}.json`));
    const swept = await sweepChildConfigs(dir.path, new Set(["run-live"]));
    expect(swept).toEqual(["run-dead"]);
    expect(readdirSync(dir.path).sort()).toEqual(["sandcastle-run-fresh.json", "sandcastle-run-live.json", "unrelated.json"]);
  });

  it("the temp dirs a killed child leaves (raw logs, git config) are swept the same way", async () => {
    const dead = "run-00000000-0000-0000-0000-000000000001";
    const live = "run-00000000-0000-0000-0000-000000000002";
    for (const name of [`scq-logs-${dead}-abc`, `scq-gitconfig-${dead}-def`, `scq-logs-${live}-ghi`, "scq-other"]) {
      mkdirSync(join(dir.path, name));
      old(join(dir.path, name));
    }
    const removed = await sweepChildTempDirs(new Set([live]), dir.path);
    expect(removed.map((p) => p.slice(dir.path.length + 1)).sort()).toEqual([`scq-gitconfig-${dead}-def`, `scq-logs-${dead}-abc`]);
    expect(readdirSync(dir.path).sort()).toEqual([`scq-logs-${live}-ghi`, "scq-other"]);
  });
});
