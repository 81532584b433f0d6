// How a real agent's run ends when its model endpoint or its setup is wrong, on real podman with the real CLIs
// and the fake model server: each ends `failed` with a reason from the closed set and a message that names the
// cause and the fix, well within its timeout, with nothing left running. And a token budget stops a run as a
// kill does, `killed` / `budget_exceeded`, with the usage at the stop.
import { chmodSync, existsSync, mkdirSync, writeFileSync } from "node:fs";
import { join, resolve } from "node:path";
import { afterEach, beforeEach, describe, expect, it } from "vitest";
import { type AGENT_CLIS } from "../../../src/sandcastle/child/agents.js";
import { ContainerRuns } from "../../helpers/container-runs.js";
import { podman, containersGone, skipContainers, TEST_IMAGE } from "../../helpers/containers.js";
import { FakeModel, type FakeScript } from "../../helpers/fake-model.js";
import { makeGitRepo, SECRET_VALUE } from "../../helpers/run-scope.js";

const COMMIT_FILE = resolve(import.meta.dirname, "../../fixtures/sandcastle/commit-file");
const OPENAI_SECRET = "sk-proj-real-agent-failures-openai-0123456789abcdef";
type Agent = keyof typeof AGENT_CLIS;
const ENDPOINT: Record<Agent, (url: string) => Record<string, string>> = {
  claudeCode: (url) => ({ ANTHROPIC_BASE_URL: url }),
  codex: (url) => ({ OPENAI_BASE_URL: `${url}/v1` }),
  pi: (url) => ({ ANTHROPIC_BASE_URL: url }),
  opencode: (url) => ({ OPENAI_BASE_URL: `${url}/v1` }),
};
const KEY: Record<Agent, string> = { claudeCode: SECRET_VALUE, codex: OPENAI_SECRET, pi: SECRET_VALUE, opencode: OPENAI_SECRET };

let c: ContainerRuns;
let fake: FakeModel | undefined;
const images: string[] = [];

beforeEach(() => {
  c = new ContainerRuns();
  c.handRepoToAgentUser();
  c.writeAgentsManifest();
});
afterEach(async () => {
  await c.close();
  fake?.stop();
  fake = undefined;
  for (const image of images.splice(0)) podman(["rmi", "--force", image], { allowFail: true });
});

const startWorker = (extra: Record<string, string> = {}) =>
  c.startWorker({
    HOME: join(c.s.dir.path, "home"),
    OPENAI_API_KEY: OPENAI_SECRET,
    SANDCASTLE_CONTAINER_MEMORY: "2g",
    ...(fake ? { SANDCASTLE_CONTAINER_NETWORK: fake.network } : {}),
    ...extra,
  });

async function run(agent: Agent, extraEnv: Record<string, string> = {}, patch: Record<string, unknown> = {}) {
  const req = c.request(
    COMMIT_FILE,
    { agent, env_manifest_name: "agents", branch: `agent/${agent}`, model: "test-model", ...patch },
    { ...ENDPOINT[agent](fake!.url), ...extraEnv },
  );
  const queued = await c.enqueueWaiting(req);
  const started = Date.now();
  const result = await queued.result();
  return { runId: queued.runId, result, seconds: (Date.now() - started) / 1000, session: String(req.session_id) };
}

const script = (agent: Agent, patch: Partial<FakeScript> = {}): FakeScript => ({
  key: KEY[agent],
  roles: [{ steps: [{ bash: "echo hi" }, { text: "done" }] }],
  ...patch,
});

describe.skipIf(skipContainers)("a real agent whose model endpoint or setup is wrong", { timeout: 300_000 }, () => {
  it.each(Object.keys(KEY) as Agent[])("%s: a key the endpoint refuses (401) ends model_auth_failed, naming the key's variable", async (agent) => {
    fake = await FakeModel.inContainer(TEST_IMAGE, script(agent, { key: "sk-not-the-key-you-sent-0123456789" }));
    await startWorker();
    const { runId, result, seconds } = await run(agent);
    expect(result, result.message ?? "").toMatchObject({ status: "failed", failure_reason: "model_auth_failed" });
    expect(result.message).toContain(KEY[agent] === SECRET_VALUE ? "ANTHROPIC_API_KEY" : "OPENAI_API_KEY");
    expect(result.message).toMatch(/401/);
    expect(seconds).toBeLessThan(120); // claude alone would retry for ~3 minutes: the first 401 ends it
    await containersGone(runId);
  });

  it("an endpoint overloaded past the agent's own retries (529) ends model_unavailable", async () => {
    fake = await FakeModel.inContainer(TEST_IMAGE, script("claudeCode", { failure: "overloaded" }));
    await startWorker();
    const { runId, result } = await run("claudeCode", { CLAUDE_CODE_MAX_RETRIES: "1" });
    expect(result, result.message ?? "").toMatchObject({ status: "failed", failure_reason: "model_unavailable" });
    expect(result.message).toMatch(/overloaded or failing \(529\) after the agent's own retries/);
    expect(result.message).toContain("ANTHROPIC_BASE_URL");
    await containersGone(runId);
  });

  it("an endpoint that closes the stream mid-answer ends model_unavailable", async () => {
    fake = await FakeModel.inContainer(TEST_IMAGE, script("claudeCode", { failure: "cut" }));
    await startWorker();
    const { runId, result } = await run("claudeCode", { CLAUDE_CODE_MAX_RETRIES: "1" });
    expect(result, result.message ?? "").toMatchObject({ status: "failed", failure_reason: "model_unavailable" });
    await containersGone(runId);
  });

  it("an endpoint that never answers ends agent_idle after SANDCASTLE_AGENT_IDLE_SECONDS, well within the run's timeout", async () => {
    fake = await FakeModel.inContainer(TEST_IMAGE, script("claudeCode", { failure: "hang" }));
    await startWorker({ SANDCASTLE_AGENT_IDLE_SECONDS: "5" });
    const { runId, result, seconds } = await run("claudeCode");
    expect(result, result.message ?? "").toMatchObject({ status: "failed", failure_reason: "agent_idle" });
    expect(result.message).toMatch(/printed nothing for 5 s: its model endpoint \(ANTHROPIC_BASE_URL\) may not be answering/);
    expect(seconds).toBeLessThan(60);
    await containersGone(runId);
  });

  it("a CLI missing from the image ends agent_unavailable, naming the image and how to build one", async () => {
    fake = await FakeModel.inContainer(TEST_IMAGE, script("codex"));
    const image = `localhost/sandcastle-queue-agent:no-codex-${Math.random().toString(36).slice(2, 8)}`;
    images.push(image);
    const context = join(c.s.dir.path, "no-codex");
    mkdirSync(context);
    writeFileSync(join(context, "Containerfile"), `FROM ${TEST_IMAGE}\nRUN rm /usr/local/bin/codex\n`);
    podman(["build", "--pull=never", "--quiet", `--tag=${image}`, context]);
    await startWorker();
    const { runId, result } = await run("codex", {}, { image });
    expect(result, result.message ?? "").toMatchObject({ status: "failed", failure_reason: "agent_unavailable" });
    expect(result.message).toContain(`the \`codex\` CLI is not in the image ${image}`);
    expect(result.message).toContain("scripts/build-sandbox-image.sh");
    await containersGone(runId);
  });

  it("a token budget stops the run as a kill does: killed / budget_exceeded, audited, with the usage at the stop", async () => {
    // The first answer alone (100 in + 7 + 3 cached) passes a budget of 100; its tool call would run a minute (not a
    // standalone sleep, which claude 2.1 refuses at once, so the second answer would come before the stop).
    fake = await FakeModel.inContainer(TEST_IMAGE, {
      key: SECRET_VALUE,
      usage: { input: 100, output: 20, cache_read: 7, cache_write: 3 },
      roles: [{ steps: [{ bash: "date; sleep 60; date" }, { text: "done" }] }],
    });
    await startWorker();
    const { runId, result, seconds } = await run("claudeCode", {}, { token_budget: 100 });
    expect(result, result.message ?? "").toMatchObject({ status: "killed", failure_reason: "budget_exceeded" });
    expect(result.message).toMatch(/used 110 tokens, past the run's budget of 100/);
    expect(result.usage).toMatchObject({ input_tokens: 100, cache_read_input_tokens: 7, cache_creation_input_tokens: 3 });
    expect(seconds).toBeLessThan(50);
    const failed = c.s.auditRows().find((r) => r.type === "sandcastle_run_failed" && r.run_id === runId);
    expect(failed).toMatchObject({ failure_reason: "budget_exceeded", usage: result.usage });
    await containersGone(runId);
  });
});

describe("claude on the host as root", () => {
  it.skipIf(process.getuid?.() !== 0)("without IS_SANDBOX=1 a dry run ends agent_unavailable before claude starts, saying what to set", async () => {
    const bin = join(c.s.dir.path, "bin");
    mkdirSync(bin);
    const ran = join(c.s.dir.path, "claude-ran");
    writeFileSync(join(bin, "claude"), `#!/bin/sh\ntouch '${ran}'\n`);
    chmodSync(join(bin, "claude"), 0o755);
    // A dry run works in the host's repository as the worker's user: root's own.
    const repo = join(c.s.dir.path, "root-repo");
    makeGitRepo(repo);
    await c.startWorker({ PATH: `${bin}:${process.env.PATH}` });
    const queued = await c.enqueueWaiting(
      c.request(COMMIT_FILE, { agent: "claudeCode", sandbox: "noSandbox", dry_run: true, branch: "agent/root", repo_workdir: repo }),
    );
    const result = await queued.result();
    expect(result, result.message ?? "").toMatchObject({ status: "failed", failure_reason: "agent_unavailable" });
    expect(result.message).toMatch(/"IS_SANDBOX": "1"/);
    expect(existsSync(ran)).toBe(false);
  });
});
