// Non-dry runs in real podman containers: real worker processes, the real child and Sandcastle library,
// the script agent inside the test image (and the real agents, their CLIs' stand-ins in a layer over it),
// real Redis. What the issue asks of a container run, checked where it can be seen: git (the commit),
// `ps` on the host, `podman inspect`, the run directory.
import { execFileSync } from "node:child_process";
import { existsSync, mkdirSync, readdirSync, readFileSync, writeFileSync } from "node:fs";
import { join, resolve } from "node:path";
import { afterAll, afterEach, beforeAll, beforeEach, describe, expect, it } from "vitest";
import { AGENT_CLIS, DEFAULT_MODELS } from "../../../src/sandcastle/child/agents.js";
import { SandcastleRunResult } from "../../../src/sandcastle/contract.js";
import { LABEL_DEPLOYMENT, LABEL_RUN_ID, SECRET_ENV_PATH } from "../../../src/sandcastle/container-args.js";
import { deploymentLabel } from "../../../src/sandcastle/run-containers.js";
import { CliProcess, lastJsonLine, runCli, stopAllCli, waitFor } from "../../helpers/cli.js";
import { buildAgentCliImage, engineEnv, giveToAgentUser, gitIn, inspect, podman, runContainerIds, skipContainers, TEST_IMAGE } from "../../helpers/containers.js";
import { makeGitRepo, RunScope, SECRET_VALUE } from "../../helpers/run-scope.js";
import { redisUrl } from "../../helpers/scope.js";

const TEMPLATE = resolve(import.meta.dirname, "../../fixtures/sandcastle/container-commit");
const FAILING = resolve(import.meta.dirname, "../../fixtures/sandcastle/failing");
const COMMIT_FILE = resolve(import.meta.dirname, "../../fixtures/sandcastle/commit-file");
/** codex's key: a second manifest value, so each CLI is seen to get its own. */
const OPENAI_SECRET = "sk-proj-process-level-openai-secret-0123456789abcdef";
/** Container runs start a container per phase: slower than dry runs on a busy machine. */
const RUN_TIMEOUT_MS = 150_000;

let s: RunScope;
let repo: string;
const made: string[] = [];

beforeEach(() => {
  s = new RunScope();
  repo = join(s.dir.path, "repo");
  makeGitRepo(repo);
  giveToAgentUser(repo);
});
afterEach(async () => {
  await stopAllCli();
  // Anything a failed test left: by our labels only.
  for (const id of podman(["ps", "--all", "--no-trunc", `--filter=label=${LABEL_DEPLOYMENT}=${deployment()}`, "--format={{.ID}}"], { allowFail: true }).split("\n").filter(Boolean)) {
    podman(["rm", "--force", "--time=0", id], { allowFail: true });
  }
  await s.close();
});
afterAll(() => {
  for (const name of made.splice(0)) podman(["rm", "--force", "--time=0", name], { allowFail: true });
});

const deployment = () => deploymentLabel(s.prefix, { kind: "url", url: redisUrl() });

function env(extra: Record<string, string> = {}): NodeJS.ProcessEnv {
  return s.env({ SANDCASTLE_BIN: "", SANDCASTLE_IMAGE: TEST_IMAGE, SANDCASTLE_CONTAINER_MEMORY: "512m", SANDCASTLE_CONTAINER_CPUS: "1", SANDCASTLE_CONTAINER_PIDS: "256", ...engineEnv(), ...extra });
}

async function startWorker(extra: Record<string, string> = {}): Promise<CliProcess> {
  const w = new CliProcess(["worker"], env(extra));
  await w.waitForOutput(/workers running/, 60_000);
  return w;
}

function request(patch: Record<string, unknown> = {}, extraEnv: Record<string, string> = {}): Record<string, unknown> {
  return {
    ...s.request({ session_id: `ctr-${Math.random().toString(36).slice(2, 8)}`, agent: "script", sandbox: "podman", dry_run: false, prompt_template_dir: TEMPLATE, repo_workdir: repo, branch: "agent/in-container", timeout_minutes: 5, ...patch }),
    extra_env: extraEnv,
  };
}

/** `enqueue --wait` as a process: the run id as soon as it is printed, the result when it exits. */
async function enqueueWaiting(req: Record<string, unknown>): Promise<{ runId: string; result: () => Promise<SandcastleRunResult> }> {
  const file = join(s.dir.path, `req-${Math.random().toString(36).slice(2, 8)}.json`);
  writeFileSync(file, JSON.stringify(req));
  const p = new CliProcess(["enqueue", "sandcastle-run", "--request", file, "--wait", "--wait-timeout", "300"], env());
  await p.waitForOutput(/"job_id"/, 60_000);
  const runId = (JSON.parse(p.stdout.split("\n")[0]!) as { job_id: string }).job_id;
  return {
    runId,
    result: async () => {
      const code = await p.waitExit();
      expect(code, p.stderr).toBe(0);
      return SandcastleRunResult.parse(lastJsonLine(p.stdout));
    },
  };
}

function worktreeOf(): string | undefined {
  const dir = join(repo, ".sandcastle", "worktrees");
  if (!existsSync(dir)) return undefined;
  const found = readdirSync(dir).map((n) => join(dir, n)).find((p) => existsSync(join(p, ".scq-ready")));
  return found;
}

const runDir = (runId: string) => join(s.configDir, `scq-run-${runId}`);

// A container run is several engine calls per phase (~0.3-1.5 s each on a loaded 2-core machine).
describe.skipIf(skipContainers)("runs in real podman containers", { timeout: 300_000 }, () => {
  it("a commit made inside the container lands on the branch; no secret on any host argv or in inspect; isolation visible; container and secret file gone after", async () => {
    await startWorker();
    const req = request({}, { HOLD: "1" });
    const run = await enqueueWaiting(req);
    const worktree = await waitFor(() => worktreeOf() !== undefined, RUN_TIMEOUT_MS, () => "the agent to start in its container").then(() => worktreeOf()!);

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
    expect(host.NetworkMode).toBe("bridge");
    // Mounts: the worktree and git dir read-write, the template and the secret file read-only, nothing else.
    const mounts = info.Mounts.map((m) => ({ source: m.Source, destination: m.Destination, rw: m.RW })).sort((a, b) => String(a.destination).localeCompare(String(b.destination)));
    expect(mounts).toEqual(
      [
        { source: worktree, destination: "/home/agent/workspace", rw: true },
        { source: join(repo, ".git"), destination: join(repo, ".git"), rw: true },
        { source: TEMPLATE, destination: TEMPLATE, rw: false },
        { source: join(runDir(run.runId), `${run.runId}.env`), destination: SECRET_ENV_PATH, rw: false },
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

    expect(runContainerIds(run.runId)).toEqual([]);
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
    expect(runContainerIds(run.runId)).toEqual([]);
    expect(existsSync(runDir(run.runId))).toBe(false);
  });

  it("worker and child SIGKILLed mid-run: the container outlives them, and the next worker removes it and the secret file", async () => {
    const w1 = await startWorker();
    const queued = await runCli(["enqueue", "sandcastle-run", "--request", "-"], env(), { input: JSON.stringify(request({}, { HOLD: "1" })) });
    const runId = (JSON.parse(queued.stdout.trim().split("\n")[0]!) as { job_id: string }).job_id;
    await waitFor(() => worktreeOf() !== undefined, RUN_TIMEOUT_MS, () => "the agent to start");
    const child = Number(execFileSync("pgrep", ["-f", `scq-run-${runId}/config.json`], { encoding: "utf8" }).trim().split("\n")[0]);
    await w1.stop("SIGKILL");
    process.kill(-child, "SIGKILL"); // its whole process group: nothing of ours is left to clean up
    expect(runContainerIds(runId)).toHaveLength(1);
    expect(existsSync(join(runDir(runId), `${runId}.env`))).toBe(true);

    await startWorker();
    await waitFor(() => runContainerIds(runId).length === 0 && !existsSync(runDir(runId)), 60_000, () => "the next worker to remove the container and the run directory");
    await waitFor(async () => (await s.queue.getJob(runId).then((j) => j?.getState())) === "failed", 60_000, () => "the lost run to be failed");
  });

  it("a worker's start removes its deployment's containers of runs that are not active, and nothing else", async () => {
    const start = (name: string, labels: string[]) => {
      made.push(name);
      podman(["run", "--detach", `--name=${name}`, ...labels.map((l) => `--label=${l}`), "--network=none", TEST_IMAGE, "sleep", "600"]);
    };
    const tag = Math.random().toString(36).slice(2, 8);
    start(`scq-test-stale-${tag}`, [`${LABEL_RUN_ID}=run-gone-${tag}`, `${LABEL_DEPLOYMENT}=${deployment()}`]);
    start(`scq-test-other-${tag}`, [`${LABEL_RUN_ID}=run-gone-${tag}`, `${LABEL_DEPLOYMENT}={other}@${redisUrl()}`]);
    start(`scq-test-plain-${tag}`, []);
    await startWorker();
    expect(runContainerIds(`run-gone-${tag}`)).toHaveLength(1);
    const left = podman(["ps", "--all", "--format={{.Names}}"]).split("\n");
    expect(left).not.toContain(`scq-test-stale-${tag}`);
    expect(left).toEqual(expect.arrayContaining([`scq-test-other-${tag}`, `scq-test-plain-${tag}`]));
  });

  it("a missing image fails the run provider_unavailable, naming the image and how to build it", async () => {
    await startWorker();
    const run = await enqueueWaiting(request({ image: "localhost/scq-no-such-image:none" }));
    const result = await run.result();
    expect(result).toMatchObject({ status: "failed", failure_reason: "provider_unavailable" });
    expect(result.message).toContain("localhost/scq-no-such-image:none");
    expect(result.message).toContain("scripts/build-sandbox-image.sh");
    expect(runContainerIds(run.runId)).toEqual([]);
  });

  it("an agent that exits non-zero fails the run agent_failed with its output, and leaves no container and no secret file", async () => {
    await startWorker();
    const run = await enqueueWaiting(request({ prompt_template_dir: FAILING, branch: "agent/failing" }));
    const result = await run.result();
    expect(result).toMatchObject({ status: "failed", failure_reason: "agent_failed", commits: [] });
    expect(result.message).toMatch(/exited with code 3/);
    // Its output, whole: it did run, in its container (it exits without reading its prompt: container-args.ts STDIN_FIRST).
    expect(result.message).toContain("something broke"); // Sandcastle quotes stderr when there is some
    expect(runContainerIds(run.runId)).toEqual([]);
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
    expect(argv).toEqual(expect.arrayContaining([expect.stringMatching(/^image exists /), `rm --force --time=0 ${run.runId}`]));
    expect(argv.some((a) => a.startsWith(`run --detach --name=${run.runId} `))).toBe(true);
    expect(argv.some((a) => a.startsWith("exec ") && a.includes(` ${run.runId} sh -c `))).toBe(true);
    expect(argv.join("\n")).not.toContain(SECRET_VALUE);
    expect(runContainerIds(run.runId)).toEqual([]);
  });

  it.skipIf(process.getuid?.() !== 0)("a repository owned by root is refused: the agent never runs as root", async () => {
    const rootRepo = join(s.dir.path, "root-repo");
    makeGitRepo(rootRepo);
    await startWorker();
    const run = await enqueueWaiting(request({ repo_workdir: rootRepo }));
    const result = await run.result();
    expect(result).toMatchObject({ status: "failed", failure_reason: "provider_unavailable" });
    expect(result.message).toMatch(/owned by root/);
    expect(runContainerIds(run.runId)).toEqual([]);
  });
});

/** The paths of every file under `dir` (none when it does not exist). */
function filesUnder(dir: string): string[] {
  return existsSync(dir) ? readdirSync(dir, { recursive: true, withFileTypes: true }).filter((e) => e.isFile()).map((e) => join(e.parentPath, e.name)) : [];
}

// The real agents through Sandcastle's own agent providers, their CLIs replaced by the stand-in of
// test/fixtures/agent-clis in a test-only layer over the test image (the request's `image`).
describe.skipIf(skipContainers)("real agents' CLIs in podman containers", { timeout: 300_000 }, () => {
  type Agent = keyof typeof AGENT_CLIS;
  /** The key each stand-in needs, and where its CLI keeps sessions under $HOME (opencode's are not captured). */
  const SPEC: Record<Agent, { key: string; sessions: string | null }> = {
    claudeCode: { key: SECRET_VALUE, sessions: ".claude/projects" },
    codex: { key: OPENAI_SECRET, sessions: ".codex/sessions" },
    pi: { key: SECRET_VALUE, sessions: ".pi/agent/sessions" },
    opencode: { key: SECRET_VALUE, sessions: null },
  };
  let image: ReturnType<typeof buildAgentCliImage>;
  let home: string;
  beforeAll(() => {
    image = buildAgentCliImage();
  });
  afterAll(() => image?.remove());
  beforeEach(() => {
    // The child's HOME is the worker's: Sandcastle copies the agent's session there.
    home = join(s.dir.path, "home");
    mkdirSync(home);
    writeFileSync(join(s.manifestDir, "agents.json"), JSON.stringify({ project_slug: "proj", vars: ["ANTHROPIC_API_KEY", "OPENAI_API_KEY"] }));
  });

  const startAgentWorker = () => startWorker({ HOME: home, OPENAI_API_KEY: OPENAI_SECRET });
  const agentRequest = (agent: Agent, extraEnv: Record<string, string> = {}) =>
    request({ agent, image: image.image, prompt_template_dir: COMMIT_FILE, env_manifest_name: "agents", branch: `agent/${agent}` }, extraEnv);

  /** The run is ok with the stand-in's one commit; what it committed says which CLI ran, with which model and key. */
  async function expectAgentCommitted(agent: Agent, req: Record<string, unknown>, result: SandcastleRunResult): Promise<void> {
    expect(result).toMatchObject({ status: "ok", branch: `agent/${agent}`, failure_reason: null });
    expect(result.commits).toHaveLength(1);
    expect(gitIn(repo, "rev-parse", `agent/${agent}`)).toBe(result.commits[0]!.sha);
    const file = `hello-${String(req.session_id)}.txt`; // the prompt's WRITE: line, {{SESSION_ID}} filled in
    expect(gitIn(repo, "show", "--name-only", "--format=", `agent/${agent}`)).toBe(file);
    expect(gitIn(repo, "show", `agent/${agent}:${file}`).split("\n")).toEqual([
      `cli=${AGENT_CLIS[agent]} model=${DEFAULT_MODELS[agent]}`,
      `argv_prompt=${agent === "opencode" ? "yes" : "no"}`,
      `key_length=${SPEC[agent].key.length}`,
      "uid=1000",
    ]);
    const logs = await runCli(["logs", String(req.session_id)], env());
    expect(logs.stdout).toContain(`${AGENT_CLIS[agent]} wrote ${file}`);
    for (const secret of [SECRET_VALUE, OPENAI_SECRET]) expect(logs.stdout).not.toContain(secret);
    const sessions = SPEC[agent].sessions;
    if (sessions !== null) {
      // Sandcastle copied the session out of the container's tmpfs home, its cwd rewritten to the host's.
      const captured = filesUnder(join(home, sessions)).filter((f) => f.endsWith(".jsonl"));
      expect(captured).toHaveLength(1);
      const text = readFileSync(captured[0]!, "utf8");
      expect(text).toContain(`"cwd":"${repo}"`);
      expect(text).not.toContain('"cwd":"/home/agent/workspace"');
    }
  }

  it("claudeCode: Sandcastle's claude invocation runs in the container, its stream is parsed, its commit lands; no secret on any host argv or in inspect", async () => {
    await startAgentWorker();
    const req = agentRequest("claudeCode", { HOLD: "1" });
    const run = await enqueueWaiting(req);
    await waitFor(() => worktreeOf() !== undefined, RUN_TIMEOUT_MS, () => "claude to start in its container");

    const ps = execFileSync("ps", ["-eo", "args"], { encoding: "utf8", maxBuffer: 64 * 1024 * 1024 });
    expect(ps).toMatch(/claude --print --verbose .*--output-format stream-json --model 'claude-opus-4-8'/);
    const raw = JSON.stringify(inspect(run.runId));
    for (const secret of [SECRET_VALUE, OPENAI_SECRET]) {
      expect(ps).not.toContain(secret);
      expect(raw).not.toContain(secret);
    }
    expect(raw).not.toMatch(/ANTHROPIC_API_KEY|OPENAI_API_KEY/);

    writeFileSync(join(worktreeOf()!, ".scq-release"), "");
    const result = await run.result();
    await expectAgentCommitted("claudeCode", req, result);
    const logs = await runCli(["logs", String(req.session_id)], env());
    expect(logs.stdout).toContain(`── run tool Bash git add hello-${String(req.session_id)}.txt`); // the stream's tool_use, parsed
    expect(runContainerIds(run.runId)).toEqual([]);
    expect(existsSync(runDir(run.runId))).toBe(false);
  });

  it.each(["codex", "pi", "opencode"] as const)("%s: Sandcastle's invocation runs in the container, its stream is parsed, its commit lands", async (agent) => {
    await startAgentWorker();
    const req = agentRequest(agent);
    const run = await enqueueWaiting(req);
    await expectAgentCommitted(agent, req, await run.result());
    expect(runContainerIds(run.runId)).toEqual([]);
  });
});
