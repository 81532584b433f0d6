// Non-dry runs in real podman containers: real worker processes, the real child and Sandcastle library,
// the script agent inside the test image (and the real agents, their CLIs' stand-ins in a layer over it),
// real Redis. What a container run must hold to, checked where it can be seen: git (the commit),
// `ps` on the host, `podman inspect`, the run directory.
import { execFileSync } from "node:child_process";
import { createHash } from "node:crypto";
import { existsSync, mkdirSync, readdirSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import { join, resolve } from "node:path";
import { afterAll, afterEach, beforeAll, beforeEach, describe, expect, it } from "vitest";
import type { SandcastleRunResult } from "../../../src/sandcastle/contract.js";
import { LABEL_DEPLOYMENT, LABEL_RUN_ID, LABEL_SPARE_OF, SECRET_ENV_PATH } from "../../../src/sandcastle/containers/container-args.js";
import { ownIdentity } from "../../../src/process-identity.js";
import { loggedChildPid, runCli, waitFor } from "../../helpers/cli.js";
import { ContainerRuns } from "../../helpers/container-runs.js";
import { gitIn, inspect, podman, containersGone, runContainerIds, skipContainers, TEST_IMAGE } from "../../helpers/containers.js";
import { makeGitRepo, type RunScope, SECRET_VALUE } from "../../helpers/run-scope.js";
import { redisUrl } from "../../helpers/scope.js";

const TEMPLATE = resolve(import.meta.dirname, "../../fixtures/sandcastle/container-commit");
const FAILING = resolve(import.meta.dirname, "../../fixtures/sandcastle/failing");
const PARALLEL = resolve(import.meta.dirname, "../../fixtures/sandcastle/parallel");
const UNCOMMITTED = resolve(import.meta.dirname, "../../fixtures/sandcastle/leave-uncommitted");
/** Container runs start a container per phase: slower than dry runs on a busy machine. */
const RUN_TIMEOUT_MS = 150_000;

let c: ContainerRuns;
let s: RunScope;
let repo: string;
const made: string[] = [];

beforeEach(() => {
  c = new ContainerRuns();
  c.handRepoToAgentUser();
  s = c.s;
  repo = c.repo;
});
afterEach(() => c.close());
afterAll(() => {
  for (const name of made.splice(0)) podman(["rm", "--force", "--time=0", name], { allowFail: true });
});

const deployment = () => c.deployment;
const env = (extra: Record<string, string> = {}) => c.env(extra);
const startWorker = (extra: Record<string, string> = {}) => c.startWorker(extra);
const request = (patch: Record<string, unknown> = {}, extraEnv: Record<string, string> = {}) => c.request(TEMPLATE, patch, extraEnv);
const enqueueWaiting = (req: Record<string, unknown>) => c.enqueueWaiting(req);

const worktreeOf = () => c.heldAgentRepo();

const runDir = (runId: string) => c.runDir(runId);

// A container run is several engine calls per phase (~0.3-1.5 s each on a loaded 2-core machine).
describe.skipIf(skipContainers)("runs in real podman containers", { timeout: 300_000 }, () => {
  it("a commit made inside the container lands on the branch; no secret on any host argv or in inspect; isolation visible; container and secret file gone after", async () => {
    await startWorker();
    const req = request({}, { HOLD: "1" });
    const run = await enqueueWaiting(req);
    const worktree = await waitFor(
      () => worktreeOf() !== undefined,
      RUN_TIMEOUT_MS,
      () => "the agent to start in its container",
    ).then(() => worktreeOf()!);

    // While the agent runs: the host's process table.
    const ps = execFileSync("ps", ["-eo", "args"], { encoding: "utf8", maxBuffer: 64 * 1024 * 1024 });
    expect(ps).toContain(run.runId); // the container's processes are there to be seen…
    expect(ps).not.toContain(SECRET_VALUE); // …and the secret is not

    // The container's config: named after the run, labelled, isolated, no secret anywhere.
    const info = inspect(run.runId);
    const raw = JSON.stringify(info);
    expect(raw).not.toContain(SECRET_VALUE);
    expect((info.Config.Env as string[]).some((e) => e.startsWith("ANTHROPIC_API_KEY"))).toBe(false);
    expect(info.Config.Labels).toMatchObject({ [LABEL_RUN_ID]: run.runId, [LABEL_DEPLOYMENT]: deployment() });
    expect(info.Config.User).toBe("1000:1000");
    const host = info.HostConfig;
    expect(host.CapAdd ?? []).toEqual([]);
    expect(host.CapDrop).toEqual(expect.arrayContaining(["CAP_CHOWN", "CAP_DAC_OVERRIDE", "CAP_SETUID", "CAP_NET_RAW"]));
    expect(host.SecurityOpt).toContain("no-new-privileges");
    expect(host.PidsLimit).toBe(256);
    expect(host.Memory).toBe(512 * 2 ** 20);
    expect(host.NanoCpus).toBe(1e9);
    expect(host.Init).toBe(true);
    // No network of its own: the run's egress proxy, through the forwarder in its main process (ADR 0035). That process
    // is also its exec server (ADR 0049), and ends itself at the run's deadline plus the 5 s kill grace.
    expect(host.NetworkMode).toBe("none");
    expect(info.Config.Entrypoint).toBe("node");
    const cmd = info.Config.Cmd as string[];
    expect(cmd).toEqual([
      "/run/sandcastle-queue/main/main.mjs",
      expect.stringMatching(/^--seconds=\d+$/),
      "--exec=/run/sandcastle-queue/exec.sock",
      "--egress-port=3128",
      "--egress-socket=/run/sandcastle-queue/egress.sock",
    ]);
    const seconds = Number(cmd[1]!.slice("--seconds=".length));
    expect(seconds).toBeGreaterThan(5 * 60 - 30);
    expect(seconds).toBeLessThanOrEqual(5 * 60 + 5);
    // Mounts: the agent's own repository read-write; the host's objects, the template, the secret file and the main
    // process's program read-only; the egress proxy's socket and the exec channel's; nothing else.
    const mounts = info.Mounts.map((m) => ({ source: m.Source, destination: m.Destination, rw: m.RW })).sort((a, b) =>
      String(a.destination).localeCompare(String(b.destination)),
    );
    expect(worktree).toBe(join(s.runsDir, run.runId, "agent", run.runId));
    expect(mounts).toEqual(
      [
        { source: worktree, destination: "/home/agent/workspace", rw: true },
        { source: join(repo, ".git", "objects"), destination: join(repo, ".git", "objects"), rw: false },
        { source: TEMPLATE, destination: TEMPLATE, rw: false },
        { source: join(runDir(run.runId), `${run.runId}.env`), destination: SECRET_ENV_PATH, rw: false },
        { source: join(runDir(run.runId), "egress.sock"), destination: "/run/sandcastle-queue/egress.sock", rw: true },
        { source: resolve(import.meta.dirname, "../../../dist/src/sandcastle/container-main"), destination: "/run/sandcastle-queue/main", rw: false },
        { source: join(runDir(run.runId), "exec-1.sock"), destination: "/run/sandcastle-queue/exec.sock", rw: true },
      ].sort((a, b) => a.destination.localeCompare(b.destination)),
    );
    expect(Object.keys(host.Tmpfs as object)).toEqual(["/home/agent"]);

    writeFileSync(join(worktree, ".scq-release"), "");
    const result = await run.result();
    expect(result).toMatchObject({ status: "ok", branch: "agent/in-container", failure_reason: null });
    expect(result.commits).toHaveLength(1);
    expect(gitIn(repo, "rev-parse", "agent/in-container")).toBe(result.commits[0]!.sha);
    const record = gitIn(repo, "show", "agent/in-container:in-container.txt");
    expect(record).toContain("uid=1000 gid=1000");
    expect(record).toContain(`secret_length=${SECRET_VALUE.length}`);
    expect(record).toContain("env_file=present");
    expect(record).toContain("CapEff:0000000000000000");
    expect(record).toContain("NoNewPrivs:1");

    await containersGone(run.runId);
    expect(existsSync(runDir(run.runId))).toBe(false);
    const logs = await runCli(["logs", String(req.session_id)], env());
    expect(logs.stdout).toContain("committed in-container.txt");
    expect(logs.stdout).not.toContain(SECRET_VALUE);
  });

  it.each([
    ["timeout", { timeout_minutes: 0.5 }, { status: "timeout", failure_reason: "timeout" }],
    ["kill switch", {}, { status: "killed", failure_reason: "kill_switch_mid_run" }],
    ["cancel", { network: "none" }, { status: "killed", failure_reason: "cancelled" }],
  ] as const)("%s mid-run leaves no container and no secret file", async (how, patch, expected) => {
    await startWorker();
    const run = await enqueueWaiting(request(patch, { HOLD: "1" }));
    // The container exists (and with it the secret file) before the run is stopped.
    await waitFor(() => runContainerIds(run.runId).length > 0, RUN_TIMEOUT_MS, () => "the run's container");
    expect(existsSync(join(runDir(run.runId), `${run.runId}.env`))).toBe(true);
    if (how === "kill switch") {
      await waitFor(() => worktreeOf() !== undefined, RUN_TIMEOUT_MS, () => "the agent to start");
      expect((await runCli(["killswitch", "on"], env())).code).toBe(0);
    }
    if (how === "cancel") {
      await waitFor(() => worktreeOf() !== undefined, RUN_TIMEOUT_MS, () => "the agent to start");
      expect(inspect(run.runId).HostConfig.NetworkMode).toBe("none");
      const cancel = await runCli(["cancel", run.runId], env());
      expect(cancel.code, cancel.stderr).toBe(0);
    }
    const result = await run.result();
    expect(result).toMatchObject(expected);
    await containersGone(run.runId);
    expect(existsSync(runDir(run.runId))).toBe(false);
  });

  it("worker and child SIGKILLed mid-run: the container ends itself with the child's exec channel, the agent with it; the next worker removes the secret file", async () => {
    const w1 = await startWorker({ LOG_LEVEL: "info" }); // it logs its run child's pid
    const queued = await runCli(["enqueue", "sandcastle-run", "--request", "-"], env(), { input: JSON.stringify(request({}, { HOLD: "1" })) });
    const runId = (JSON.parse(queued.stdout.trim().split("\n")[0]!) as { job_id: string }).job_id;
    await waitFor(() => worktreeOf() !== undefined, RUN_TIMEOUT_MS, () => "the agent to start");
    const child = loggedChildPid(w1, runId);
    // Both at once, the child's whole process group too: neither can clean up after the other (a child that saw its
    // worker go first would remove its own files, which is not what this test is about).
    process.kill(w1.pid, "SIGKILL");
    process.kill(-child, "SIGKILL");
    await w1.stop("SIGKILL");
    // Its exec server saw the channel close: it killed what it ran for the child and ended, the container with it (ADR 0049).
    await waitFor(
      () => runContainerIds(runId).length === 0,
      30_000,
      () => "the container to end with its child",
    );
    expect(existsSync(join(runDir(runId), `${runId}.env`))).toBe(true);

    await startWorker();
    await waitFor(
      () => !existsSync(runDir(runId)),
      60_000,
      () => "the next worker to remove the run directory",
    );
    await waitFor(
      async () => (await s.queue.getJob(runId).then((j) => j?.getState())) === "failed",
      60_000,
      () => "the lost run to be failed",
    );
  });

  it("a worker's start removes its deployment's containers of runs that are not active and dead workers' warm ones, and nothing else", async () => {
    const start = (name: string, labels: string[]) => {
      made.push(name);
      podman(["run", "--detach", `--name=${name}`, ...labels.map((l) => `--label=${l}`), "--network=none", TEST_IMAGE, "sleep", "600"]);
    };
    const tag = Math.random().toString(36).slice(2, 8);
    start(`scq-test-stale-${tag}`, [`${LABEL_RUN_ID}=run-gone-${tag}`, `${LABEL_DEPLOYMENT}=${deployment()}`]);
    start(`scq-test-other-${tag}`, [`${LABEL_RUN_ID}=run-gone-${tag}`, `${LABEL_DEPLOYMENT}={other}@${redisUrl()}`]);
    start(`scq-test-plain-${tag}`, []);
    // Warm containers (ADR 0053): a live worker's waits for its run and stays; a dead worker's goes.
    const spare = (name: string, of: string) =>
      start(name, [`${LABEL_RUN_ID}=spare-${name}`, `${LABEL_DEPLOYMENT}=${deployment()}`, `${LABEL_SPARE_OF}=${of}`]);
    spare(`scq-test-warm-live-${tag}`, ownIdentity());
    spare(`scq-test-warm-dead-${tag}`, ownIdentity().replace(/ \S+$/, " 1")); // this process's pid, another start: not it
    await startWorker();
    expect(runContainerIds(`run-gone-${tag}`)).toHaveLength(1);
    const left = podman(["ps", "--all", "--format={{.Names}}"]).split("\n");
    expect(left).not.toContain(`scq-test-stale-${tag}`);
    expect(left).not.toContain(`scq-test-warm-dead-${tag}`);
    expect(left).toEqual(expect.arrayContaining([`scq-test-other-${tag}`, `scq-test-plain-${tag}`, `scq-test-warm-live-${tag}`]));
  });

  it("a missing image fails the run provider_unavailable, naming the image and how to build it", async () => {
    await startWorker();
    const run = await enqueueWaiting(request({ image: "localhost/scq-no-such-image:none" }));
    const result = await run.result();
    expect(result).toMatchObject({ status: "failed", failure_reason: "provider_unavailable" });
    expect(result.message).toContain("localhost/scq-no-such-image:none");
    expect(result.message).toContain("scripts/build-sandbox-image.sh");
    await containersGone(run.runId);
  });

  it("an agent that exits non-zero fails the run agent_failed with its output, and leaves no container and no secret file", async () => {
    await startWorker();
    const run = await enqueueWaiting(request({ prompt_template_dir: FAILING, branch: "agent/failing" }));
    const result = await run.result();
    expect(result).toMatchObject({ status: "failed", failure_reason: "agent_failed", commits: [] });
    expect(result.message).toMatch(/exited with code 3/);
    // Its output, whole: it did run, in its container (it exits without reading its prompt: container-args.ts STDIN_FIRST).
    expect(result.message).toContain("something broke"); // Sandcastle quotes stderr when there is some
    await containersGone(run.runId);
    expect(existsSync(runDir(run.runId))).toBe(false);
  });

  it("SANDCASTLE_CONTAINER_CLI naming a wrapper of podman at another path: the run is ok and every engine call goes through it", async () => {
    const calls = join(s.dir.path, "engine-calls");
    const wrapper = join(s.dir.path, "engine-bin", "my-podman");
    mkdirSync(join(s.dir.path, "engine-bin"));
    const realPodman = execFileSync("sh", ["-c", "command -v podman"], { encoding: "utf8" }).trim();
    writeFileSync(wrapper, `#!/bin/sh\nprintf '%s\\n' "$*" >> '${calls}'\nexec '${realPodman}' "$@"\n`, { mode: 0o755 });
    await startWorker({ SANDCASTLE_CONTAINER_CLI: wrapper });
    const run = await enqueueWaiting(request({ branch: "agent/own-cli" }));
    const result = await run.result();
    expect(result).toMatchObject({ status: "ok", branch: "agent/own-cli", failure_reason: null });
    expect(gitIn(repo, "rev-parse", "agent/own-cli")).toBe(result.commits[0]!.sha);
    const argv = readFileSync(calls, "utf8").split("\n");
    expect(argv).toEqual(expect.arrayContaining([expect.stringMatching(/^image exists /)]));
    expect(argv.some((a) => a.startsWith(`run --detach --rm --pull=never --name=${run.runId} `))).toBe(true);
    // The container ended through its server (ADR 0051): no `rm` was needed.
    expect(argv.filter((a) => a.startsWith("rm "))).toEqual([]);
    // Every command in the container went over its exec channel (ADR 0049): no `exec` through the CLI.
    expect(argv.filter((a) => a.startsWith("exec "))).toEqual([]);
    expect(argv.join("\n")).not.toContain(SECRET_VALUE);
    await containersGone(run.runId);
  });

  it("a run that fails after its container started early (its branch held by another run): the container and the agent's repository are gone", async () => {
    await startWorker();
    // Another run's claim on the branch (worktrees.ts), held by a live process: this one's worktree is refused.
    const branch = "agent/claimed";
    const claim = join(repo, ".git", `sandcastle-queue-branch-${createHash("sha256").update(branch).digest("hex").slice(0, 20)}.lock`);
    writeFileSync(claim, `${process.pid}\n${branch}\n`);
    try {
      const run = await enqueueWaiting(request({ branch }));
      const result = await run.result();
      expect(result, result.message ?? "").toMatchObject({ status: "failed", message: expect.stringMatching(/in use by another run/) });
      await containersGone(run.runId);
      expect(existsSync(join(s.runsDir, run.runId, "agent", run.runId))).toBe(false);
    } finally {
      rmSync(claim, { force: true });
    }
  });

  it("a container of a finished run still there after its result (an engine whose own --rm failed) is removed by the worker within seconds", async () => {
    const worker = await startWorker();
    const run = await enqueueWaiting(request({ branch: "agent/leftover" }));
    expect(await run.result()).toMatchObject({ status: "ok" });
    await containersGone(run.runId);
    // What the engine left: a container with the run's labels, there after the result.
    const name = `scq-test-left-${run.runId.slice(-8)}`;
    made.push(name);
    const labels = [`--label=${LABEL_RUN_ID}=${run.runId}`, `--label=${LABEL_DEPLOYMENT}=${deployment()}`];
    podman(["run", "--detach", `--name=${name}`, ...labels, "--network=none", TEST_IMAGE, "sleep", "600"]);
    await containersGone(run.runId, 30_000);
    await worker.waitForOutput(/removed containers still there after the run/, 5000);
  });

  it("a container run's uncommitted work is retained: the workspace shows it to git status, in a repository the worker made, the transcript gone", async () => {
    await startWorker();
    const run = await enqueueWaiting(request({ prompt_template_dir: UNCOMMITTED, branch: "agent/wip" }));
    const result = await run.result();
    expect(result, result.message ?? "").toMatchObject({ status: "ok", branch: "agent/wip" });
    expect(result.message).toContain("the agent left uncommitted changes");
    await s.kept(run.runId);
    const workspace = join(s.runsDir, run.runId, "workspace");
    expect(gitIn(workspace, "rev-parse", "HEAD")).toBe(gitIn(repo, "rev-parse", "agent/wip"));
    expect(gitIn(workspace, "status", "--porcelain")).toBe("?? wip.txt");
    expect(readFileSync(join(workspace, "done.txt"), "utf8")).toBe("done\n");
    expect(existsSync(join(workspace, ".claude", "projects"))).toBe(false);
    // Not the agent's git dir: the worker's, with no alternates into the host repository (it works without it).
    expect(existsSync(join(workspace, ".git", "objects", "info", "alternates"))).toBe(false);
    expect(existsSync(join(s.runsDir, run.runId, "agent"))).toBe(false);
  });

  it("the parallel planner in containers: plan, two implementers with review, merge; each phase in a repository of its own, every branch taken back checked", async () => {
    await startWorker();
    const base = gitIn(repo, "rev-parse", "HEAD");
    const run = await enqueueWaiting(request({ prompt_template_dir: PARALLEL, branch: "agent/par", parallel_implementers: 2 }));
    const result = await run.result();
    expect(result, result.message ?? "").toMatchObject({ status: "ok", branch: "agent/par", merged_branch: "agent/par", refused_changes: [] });
    expect(result.commits.map((c) => c.sha)).toEqual(gitIn(repo, "rev-list", "--reverse", `${base}..agent/par`).split("\n"));
    const subjects = gitIn(repo, "log", "--format=%s", `${base}..agent/par`);
    for (const subject of ["implementer 1: alpha", "implementer 2: beta", "review 1", "review 2"]) expect(subjects).toContain(subject);
    expect(gitIn(repo, "show", "agent/par:impl-1.txt")).toBe("alpha\nreviewed");
    expect(gitIn(repo, "show", "agent/par:impl-2.txt")).toBe("beta\nreviewed");
    // Merged implementer branches are removed; no worktree and no agent repository is left.
    expect(gitIn(repo, "branch", "--list", "agent/par-impl-*")).toBe("");
    expect(gitIn(repo, "worktree", "list", "--porcelain").match(/^worktree /gm)).toHaveLength(1);
    await s.kept(run.runId);
    expect(existsSync(join(s.runsDir, run.runId, "agent"))).toBe(false);
    // A root worker hands back what it added to the repository (refs, reflogs, objects, config) to its owner.
    if (process.getuid?.() === 0) expect(execFileSync("find", [join(repo, ".git"), join(repo, ".sandcastle"), "-uid", "0"], { encoding: "utf8" })).toBe("");
    expect(gitIn(repo, "status", "--porcelain")).toBe("");
    await containersGone(run.runId);
  });

  it.skipIf(process.getuid?.() !== 0)("a repository owned by root is refused: the agent never runs as root", async () => {
    const rootRepo = join(s.dir.path, "root-repo");
    makeGitRepo(rootRepo);
    await startWorker();
    const run = await enqueueWaiting(request({ repo_workdir: rootRepo }));
    const result = await run.result();
    expect(result).toMatchObject({ status: "failed", failure_reason: "provider_unavailable" });
    expect(result.message).toMatch(/owned by root/);
    await containersGone(run.runId);
  });
});
