// RunRetention in-process on a real git repository and real directories: two keepers of one run at once (a
// lost run's own worker and the one declaring it lost), and when a worker declaring a run lost keeps it.
import { existsSync, mkdirSync, readdirSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { afterEach, beforeEach, describe, expect, it } from "vitest";
import { lostRunResult, newRunId } from "../../../queues/index.js";
import { createLogger } from "../../../src/log.js";
import { SandcastleRunRequest } from "../../../src/sandcastle/contract.js";
import { RunRetention } from "../../../src/sandcastle/run-retention.js";
import { gitOut, makeGitRepo } from "../../helpers/git-repo.js";
import { tempDir } from "../../helpers/scope.js";

let dir: ReturnType<typeof tempDir>;
let repo: string;
let runsDir: string;
let retention: RunRetention;
let request: SandcastleRunRequest;

beforeEach(() => {
  dir = tempDir("scqk");
  repo = join(dir.path, "repo");
  runsDir = join(dir.path, "runs");
  makeGitRepo(repo);
  gitOut(repo, "branch", "agent/k");
  retention = new RunRetention({ runsDir, windowMs: 3_600_000, defaultImage: "localhost/sandcastle-queue-agent:latest", log: createLogger("silent") });
  request = SandcastleRunRequest.parse({ session_id: "s1", agent: "script", sandbox: "noSandbox", dry_run: true, prompt_template_dir: dir.path, branch: "agent/k", repo_workdir: repo, env_manifest_name: "proj" });
});
afterEach(() => dir.remove());

/** What a run's worker leaves in RUNS_DIR while it runs: its log lines. */
function logWritten(runId: string): void {
  mkdirSync(join(runsDir, runId, "job"), { recursive: true });
  writeFileSync(join(runsDir, runId, "job", "session.log"), "a line\n");
}

describe("keep", () => {
  it("two keepers of one run at once: one keeps it, the other leaves it alone (no second copy, no removal)", async () => {
    const runId = newRunId();
    logWritten(runId);
    const [a, b] = await Promise.all([retention.keep(runId, request, lostRunResult(runId, "agent/k")), retention.keep(runId, request, lostRunResult(runId, "agent/k"))]);
    expect([a, b].filter((k) => k !== null)).toHaveLength(1);
    expect(readdirSync(join(runsDir, runId)).sort()).toEqual(["job", "retained.json", "workspace"]);
    expect(gitOut(join(runsDir, runId, "workspace"), "-c", "safe.directory=*", "rev-parse", "HEAD")).toBe(gitOut(repo, "rev-parse", "agent/k"));
  });
});

describe("keepLost", () => {
  it("keeps a lost run whose log lines are in this RUNS_DIR; not one that left nothing here, nor one its own worker already kept", async () => {
    const here = newRunId();
    logWritten(here);
    expect(await retention.keepLost(here, request, lostRunResult(here, "agent/k"))).not.toBeNull();
    expect(existsSync(join(runsDir, here, "retained.json"))).toBe(true);

    const elsewhere = newRunId();
    expect(await retention.keepLost(elsewhere, request, lostRunResult(elsewhere, "agent/k"))).toBeNull();
    expect(existsSync(join(runsDir, elsewhere))).toBe(false);

    // Kept already (by its own worker, which lost only its lock): left as it is, no second reap job asked for.
    const marker = join(runsDir, here, "workspace", "untouched");
    writeFileSync(marker, "");
    expect(await retention.keepLost(here, request, lostRunResult(here, "agent/k"))).toBeNull();
    expect(existsSync(marker)).toBe(true);
  });
});

describe("logSink", () => {
  it("a retained log the disk refuses stops alone: no error escapes, the run's other sinks and the worker go on", async () => {
    const runId = newRunId();
    // session.log cannot be opened as a file: its path is a directory (as a full or read-only disk, it refuses).
    mkdirSync(join(runsDir, runId, "job", "session.log"), { recursive: true });
    const sink = retention.logSink(runId);
    await sink(["first line"]);
    await new Promise((r) => setTimeout(r, 50));
    await sink(["second line"]);
    expect(await retention.keep(runId, request, lostRunResult(runId, "agent/k"))).not.toBeNull();
  });
});

