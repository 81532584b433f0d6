// RunRetention in-process on a real git repository and real directories: two keepers of one run at once (a
// lost run's own worker and the one declaring it lost), and when a worker declaring a run lost keeps it.
import { execFileSync } from "node:child_process";
import { randomBytes } from "node:crypto";
import { existsSync, mkdirSync, readdirSync, statSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { afterEach, beforeEach, describe, expect, it } from "vitest";
import { lostRunResult, newRunId } from "../../../queues/index.js";
import { createLogger } from "../../../src/log.js";
import { AGENT_WORKSPACE, SandcastleRunRequest } from "../../../src/sandcastle/contract.js";
import { RunRetention } from "../../../src/sandcastle/retention/run-retention.js";
import { AGENT_WORK_DIR } from "../../../src/sandcastle/retention/retained-runs.js";
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
  retention = new RunRetention({
    runsDir,
    windowMs: 3_600_000,
    defaultImage: "localhost/sandcastle-queue-agent:latest",
    deployment: "{scqk}@test",
    log: createLogger("silent"),
  });
  request = SandcastleRunRequest.parse({
    session_id: "s1",
    agent: "script",
    sandbox: "noSandbox",
    dry_run: true,
    prompt_template_dir: dir.path,
    branch: "agent/k",
    repo_workdir: repo,
    env_manifest_name: "proj",
  });
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
    const [a, b] = await Promise.all([
      retention.keep(runId, request, lostRunResult(runId, "agent/k")),
      retention.keep(runId, request, lostRunResult(runId, "agent/k")),
    ]);
    expect([a, b].filter((k) => k !== null)).toHaveLength(1);
    expect(readdirSync(join(runsDir, runId)).sort()).toEqual(["deployment", "job", "retained.json", "workspace"]);
    expect(gitOut(join(runsDir, runId, "workspace"), "-c", "safe.directory=*", "rev-parse", "HEAD")).toBe(gitOut(repo, "rev-parse", "agent/k"));
  });
});

describe("footprint", () => {
  it("a retained workspace costs its files and the run's own objects, not the repository's history; it works without the repository", async () => {
    // 60 MB of history (incompressible blobs, rewritten 12 times) under a small checkout.
    const git = (...args: string[]) => gitOut(repo, "-c", "user.name=t", "-c", "user.email=t@t", ...args);
    for (let i = 0; i < 12; i++) {
      writeFileSync(join(repo, "big.bin"), randomBytes(5 * 2 ** 20));
      git("add", "big.bin");
      git("commit", "-q", "-m", `history ${i}`);
    }
    git("rm", "-q", "big.bin");
    git("commit", "-q", "-m", "history gone from the tree");
    gitOut(repo, "branch", "-f", "agent/k", "HEAD");
    // The run: two commits on its branch, and a file it left uncommitted.
    const base = gitOut(repo, "rev-parse", "agent/k");
    gitOut(repo, "checkout", "-q", "agent/k");
    for (const name of ["a.txt", "b.txt"]) {
      writeFileSync(join(repo, name), `${name}\n`);
      git("add", name);
      git("commit", "-q", "-m", `run: ${name}`);
    }
    gitOut(repo, "checkout", "-q", "main");
    const commits = gitOut(repo, "rev-list", "--reverse", `${base}..agent/k`).split("\n").map((sha) => ({ sha }));
    const runId = newRunId();
    const kept = await retention.keep(runId, request, { ...lostRunResult(runId, "agent/k"), status: "ok", failure_reason: null, commits });
    expect(kept).not.toBeNull();
    const workspace = join(runsDir, runId, "workspace");
    const files = ["README.md", "a.txt", "b.txt"].reduce((n, f) => n + statSync(join(workspace, f)).size, 0);
    const gitBytes = Number(execFileSync("du", ["-sb", join(workspace, ".git")], { encoding: "utf8" }).split("\t")[0]);
    // Its git dir is a few KiB of objects and bookkeeping, against 60 MB of history in the repository.
    expect(gitBytes).toBeLessThan(256 * 1024);
    expect(files).toBeLessThan(1024);
    // It works without the repository: the run's commits in its log, its files checked out.
    execFileSync("mv", [repo, `${repo}-gone`]);
    const wsGit = (...args: string[]) => gitOut(workspace, "-c", "safe.directory=*", ...args);
    expect(wsGit("log", "--format=%s").split("\n")).toEqual(["run: b.txt", "run: a.txt", "history gone from the tree"]);
    expect(wsGit("status", "--porcelain")).toBe("");
    expect(wsGit("fsck", "--no-dangling")).toBe("");
  });

  it("a container run's workspace costs its files once: the checkout's other blobs are promised by the repository, and without it log -p, status and diff still work", async () => {
    const git = (...args: string[]) => gitOut(repo, "-c", "user.name=t", "-c", "user.email=t@t", ...args);
    // A checkout of 2 MB of text in 100 files.
    mkdirSync(join(repo, "src"));
    for (let i = 0; i < 100; i++)
      writeFileSync(join(repo, "src", `m${i}.ts`), `export const v${i} = ${JSON.stringify(randomBytes(10_000).toString("hex"))};\n`);
    git("add", "src");
    git("commit", "-q", "-m", "sources");
    gitOut(repo, "branch", "-f", "agent/k", "HEAD");
    const base = gitOut(repo, "rev-parse", "agent/k");
    // The run: one commit changing one file, then a change it left uncommitted (in its own repository's files).
    gitOut(repo, "checkout", "-q", "agent/k");
    writeFileSync(join(repo, "src", "m1.ts"), "export const v1 = 'changed by the run';\n");
    git("commit", "-q", "-am", "run: m1");
    gitOut(repo, "checkout", "-q", "main");
    const runId = newRunId();
    const agentFiles = join(runsDir, runId, AGENT_WORK_DIR, AGENT_WORKSPACE);
    mkdirSync(agentFiles, { recursive: true });
    execFileSync("sh", ["-c", `git -C "$1" archive agent/k | tar -x -C "$2"`, "sh", repo, agentFiles]);
    writeFileSync(join(agentFiles, "src", "m2.ts"), "export const v2 = 'left uncommitted';\n");
    const commits = gitOut(repo, "rev-list", `${base}..agent/k`)
      .split("\n")
      .map((sha) => ({ sha }));
    const container = SandcastleRunRequest.parse({ ...request, sandbox: "podman", dry_run: false });
    expect(await retention.keep(runId, container, { ...lostRunResult(runId, "agent/k"), status: "ok", failure_reason: null, commits })).not.toBeNull();

    const workspace = join(runsDir, runId, "workspace");
    const du = (path: string) => Number(execFileSync("du", ["-sb", path], { encoding: "utf8" }).split("\t")[0]);
    const gitBytes = du(join(workspace, ".git"));
    const files = du(workspace) - gitBytes;
    // The checked-out files (~2 MB) once, and the run's own objects: not a second, packed copy of the checkout.
    expect(files).toBeGreaterThan(1_900_000);
    expect(du(workspace)).toBeLessThan(files * 1.1);
    const wsGit = (...args: string[]) => gitOut(workspace, "-c", "safe.directory=*", ...args);
    // A partial clone of the repository: what it lacks, it would fetch from there.
    expect(wsGit("config", "remote.origin.url")).toBe(repo);
    expect(wsGit("config", "extensions.partialClone")).toBe("origin");
    execFileSync("mv", [repo, `${repo}-gone`]);
    expect(wsGit("log", "-p", "--format=%s", "-1")).toContain("+export const v1 = 'changed by the run';");
    expect(wsGit("status", "--porcelain")).toBe("M src/m2.ts");
    expect(wsGit("diff")).toContain("+export const v2 = 'left uncommitted';");
    expect(wsGit("fsck", "--no-dangling", "--connectivity-only")).toBe("");
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

