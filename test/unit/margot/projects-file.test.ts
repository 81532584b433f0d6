// The projects config file is re-read when it changes, so edits need no restart; it is looked at no
// more than once per PROJECTS_RECHECK_MS, and a failed read is tried again by the next caller.
import { utimesSync, writeFileSync, rmSync } from "node:fs";
import { join } from "node:path";
import { afterEach, beforeEach, describe, expect, it } from "vitest";
import { createLogger } from "../../../src/log.js";
import { PROJECTS_RECHECK_MS, projectsLoader } from "../../../src/margot/projects-file.js";
import { tempDir } from "../../helpers/scope.js";

let dir: ReturnType<typeof tempDir>;
let path: string;
let clock = 0;
beforeEach(() => {
  dir = tempDir("scqp");
  path = join(dir.path, "projects.json");
  clock = 1_000_000;
});
afterEach(() => dir.remove());

const write = (names: string[], mtimeS: number) => {
  writeFileSync(path, JSON.stringify({ projects: names.map((name) => ({ name, repo: `CleanExpo/${name}` })) }));
  utimesSync(path, mtimeS, mtimeS);
};
const names = async (load: () => Promise<readonly { name: string }[]>) => (await load()).map((p) => p.name);

describe("projectsLoader", () => {
  it("an edit takes effect once the recheck interval has passed, without a restart", async () => {
    write(["RestoreAssist"], 1000);
    const load = projectsLoader(path, createLogger("silent"), () => clock);
    expect(await names(load)).toEqual(["RestoreAssist"]);
    write(["RestoreAssist", "Synthex"], 2000);
    clock += PROJECTS_RECHECK_MS - 1;
    expect(await names(load)).toEqual(["RestoreAssist"]);
    clock += 1;
    expect(await names(load)).toEqual(["RestoreAssist", "Synthex"]);
  });

  it("concurrent callers share one check", async () => {
    write(["CARSI"], 1000);
    const load = projectsLoader(path, createLogger("silent"), () => clock);
    const [a, b] = [load(), load()];
    expect(a).toBe(b);
    expect((await a).map((p) => p.name)).toEqual(["CARSI"]);
  });

  it("a missing file is an empty allowlist; an invalid one fails naming the path and is read again by the next caller once fixed", async () => {
    const load = projectsLoader(path, createLogger("silent"), () => clock);
    expect(await load()).toEqual([]);
    clock += PROJECTS_RECHECK_MS;
    writeFileSync(path, "{ not json");
    utimesSync(path, 3000, 3000);
    await expect(load()).rejects.toThrow(`PROJECTS_CONFIG_PATH ${path} is not valid JSON`);
    write(["Synthex"], 4000);
    expect(await names(load)).toEqual(["Synthex"]);
    rmSync(path);
    clock += PROJECTS_RECHECK_MS;
    expect(await load()).toEqual([]);
  });
});
