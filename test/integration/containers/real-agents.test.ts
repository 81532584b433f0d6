// The real agents' CLIs (claude, codex, pi, opencode: the versions the sandbox image pins) run for real through the
// whole path — producer → queue → worker → child → Sandcastle → our podman provider → the CLI in the image → the
// fake model server (test/fixtures/fake-model) in a `--network none` container the run's containers join
// (SANDCASTLE_CONTAINER_NETWORK=container:<fake>). Nothing leaves namespaces the test made. Each run commits what
// the model asked for; the key reaches the fake server and nothing else; the session log reads as a person would
// follow it; the result carries the agents' token usage.
import { execFileSync } from "node:child_process";
import { existsSync, readdirSync, readFileSync, statSync, writeFileSync } from "node:fs";
import { join, resolve } from "node:path";
import { Redis } from "ioredis";
import { afterEach, beforeEach, describe, expect, it } from "vitest";
import { type AGENT_CLIS } from "../../../src/sandcastle/child/agents.js";
import type { RunUsage } from "../../../src/sandcastle/contract.js";
import { runCli, waitFor } from "../../helpers/cli.js";
import { ContainerRuns } from "../../helpers/container-runs.js";
import { gitIn, inspect, containersGone, runContainerIds, skipContainers, TEST_IMAGE } from "../../helpers/containers.js";
import { FakeModel, type FakeScript } from "../../helpers/fake-model.js";
import { startService } from "../../helpers/http-service.js";
import { SECRET_VALUE } from "../../helpers/run-scope.js";
import { redisUrl } from "../../helpers/scope.js";

const COMMIT_FILE = resolve(import.meta.dirname, "../../fixtures/sandcastle/commit-file");
const PARALLEL = resolve(import.meta.dirname, "../../fixtures/sandcastle/parallel");
/** The OpenAI key: a second manifest value, so each CLI is seen to get its own. */
const OPENAI_SECRET = "sk-proj-real-agents-openai-secret-0123456789abcdef";
const USAGE = { input: 100, output: 20, cache_read: 7, cache_write: 3 };

type Agent = keyof typeof AGENT_CLIS;
/** What each CLI speaks to the fake server, with which key, and the name its shell tool has. */
const SPEC: Record<Agent, { key: string; endpoint: Record<string, string>; path: string; tool: string }> = {
  claudeCode: { key: SECRET_VALUE, endpoint: { ANTHROPIC_BASE_URL: "url" }, path: "/v1/messages", tool: "Bash" },
  codex: { key: OPENAI_SECRET, endpoint: { OPENAI_BASE_URL: "url/v1" }, path: "/v1/responses", tool: "shell" },
  pi: { key: SECRET_VALUE, endpoint: { ANTHROPIC_BASE_URL: "url" }, path: "/v1/messages", tool: "bash" },
  opencode: { key: OPENAI_SECRET, endpoint: { OPENAI_BASE_URL: "url/v1" }, path: "/v1/chat/completions", tool: "bash" },
};

/** Two model turns (the tool call, the final text), as each CLI reports them (fake-model/server.mjs sends USAGE per answer). */
function expectedUsage(agent: Agent): RunUsage {
  const u = USAGE;
  switch (agent) {
    case "claudeCode":
    case "pi":
      return {
        input_tokens: 2 * u.input,
        output_tokens: 2 * u.output,
        cache_read_input_tokens: 2 * u.cache_read,
        cache_creation_input_tokens: 2 * u.cache_write,
        turns: 2,
      };
    case "codex": // one codex turn; the Responses API says nothing of cache writes
      return { input_tokens: 2 * u.input, output_tokens: 2 * u.output, cache_read_input_tokens: 2 * u.cache_read, cache_creation_input_tokens: 0, turns: 1 };
    case "opencode": // Chat Completions says nothing of cache writes
      return { input_tokens: 2 * u.input, output_tokens: 2 * u.output, cache_read_input_tokens: 2 * u.cache_read, cache_creation_input_tokens: 0, turns: 2 };
  }
}

let c: ContainerRuns;
let fake: FakeModel | undefined;
let home: string;

beforeEach(() => {
  c = new ContainerRuns();
  c.handRepoToAgentUser();
  // The child's HOME is the worker's: Sandcastle copies agents' session transcripts there.
  home = join(c.s.dir.path, "home");
  execFileSync("mkdir", ["-p", home]);
  c.writeAgentsManifest();
});
afterEach(async () => {
  await c.close();
  fake?.stop();
  fake = undefined;
});

// The CLIs want more than the script agent: opencode's runtime was OOM-killed at 512 MiB.
const workerEnv = (network: string, extra: Record<string, string> = {}) => ({
  HOME: home,
  OPENAI_API_KEY: OPENAI_SECRET,
  SANDCASTLE_CONTAINER_NETWORK: network,
  SANDCASTLE_CONTAINER_MEMORY: "2g",
  ...extra,
});

function agentRequest(agent: Agent, patch: Record<string, unknown> = {}, extraEnv: Record<string, string> = {}): Record<string, unknown> {
  const endpoint = Object.fromEntries(Object.entries(SPEC[agent].endpoint).map(([name, v]) => [name, v.replace("url", fake!.url)]));
  return c.request(
    COMMIT_FILE,
    { agent, env_manifest_name: "agents", branch: `agent/${agent}`, model: `test-model-${agent}`, ...patch },
    { ...endpoint, ...extraEnv },
  );
}

/** The model's script: write the prompt's file and commit it (after `hold`, a command that waits), then say so. */
function commitScript(agent: Agent, hold = ""): FakeScript {
  const file = "{{field:WRITE}}";
  return {
    key: SPEC[agent].key,
    usage: USAGE,
    roles: [
      {
        steps: [
          { bash: `${hold}printf 'hello from ${agent}\\n' > ${file} && git add ${file} && git commit -q -m '${agent}: ${file}' && echo committed ${file}` },
          { text: `Done: committed ${file}.` },
        ],
      },
    ],
  };
}

/** Every file under `dir` whose bytes hold `needle`. */
function filesHolding(dir: string, needle: string): string[] {
  const found: string[] = [];
  const walk = (p: string) => {
    const st = statSync(p, { throwIfNoEntry: false });
    if (st === undefined) return;
    if (st.isDirectory()) for (const name of readdirSync(p)) walk(join(p, name));
    else if (st.isFile() && readFileSync(p).includes(needle)) found.push(p);
  };
  walk(dir);
  return found;
}

/** Every value stored under the scope's prefix, as text. */
async function redisDump(prefix: string): Promise<string> {
  const r = new Redis(redisUrl());
  try {
    const keys = await r.keys(`${prefix}*`);
    const parts: string[] = [];
    for (const key of keys) {
      const type = await r.type(key);
      if (type === "string") parts.push(String(await r.get(key)));
      else if (type === "hash") parts.push(JSON.stringify(await r.hgetall(key)));
      else if (type === "list") parts.push(JSON.stringify(await r.lrange(key, 0, -1)));
      else if (type === "stream") parts.push(JSON.stringify(await r.xrange(key, "-", "+")));
      else if (type === "zset") parts.push(JSON.stringify(await r.zrange(key, "0", "-1")));
      else if (type === "set") parts.push(JSON.stringify(await r.smembers(key)));
    }
    return parts.join("\n");
  } finally {
    r.disconnect();
  }
}

describe.skipIf(skipContainers)("the real agents' CLIs in podman, against a fake model server", { timeout: 300_000 }, () => {
  it.each(Object.keys(SPEC) as Agent[])("%s: commits what the model asked, the key reaches only the model, the log reads, usage is counted", async (agent) => {
    fake = await FakeModel.inContainer(TEST_IMAGE, commitScript(agent));
    await c.startWorker(workerEnv(fake.network));
    // The HTTP side counts the run's tokens from BullMQ's events (it must be up when the run ends).
    const { base } = await startService("serve", c.env({ PORT: "0" }));
    const req = agentRequest(agent);
    const sid = String(req.session_id);
    const run = await c.enqueueWaiting(req);
    const result = await run.result();

    expect(result, result.message ?? "").toMatchObject({ status: "ok", branch: `agent/${agent}`, failure_reason: null });
    expect(result.commits).toHaveLength(1);
    expect(gitIn(c.repo, "show", `agent/${agent}:hello-${sid}.txt`)).toBe(`hello from ${agent}`);

    // The model's side: every request with the key, to the agent's protocol, the model as given, the prompt as written.
    const calls = fake.modelRequests();
    expect(calls.length).toBeGreaterThanOrEqual(2);
    for (const call of calls) expect(call).toMatchObject({ path: SPEC[agent].path, key: "match", model: `test-model-${agent}` });
    const prompt = calls.find((r) => (r.tools?.length ?? 0) > 0)!.user_text!;
    expect(prompt).toContain(`WRITE: hello-${sid}.txt`);
    expect(prompt.trimStart().startsWith("-\n")).toBe(false); // claude reads its prompt whole (Sandcastle's `-p -`, fixed)

    // The log, as a person follows it: the tool call, its result, the final text, how it ended.
    const logs = (await runCli(["logs", sid], c.env())).stdout;
    expect(logs).toContain(`── run tool ${SPEC[agent].tool} printf 'hello from ${agent}`);
    expect(logs).toContain(`── run tool result: committed hello-${sid}.txt`);
    expect(logs).toContain(`Done: committed hello-${sid}.txt.`);
    expect(logs).toMatch(/── run result: /);
    expect(logs).toMatch(/── run ok/);

    expect(result.usage).toEqual(expectedUsage(agent));
    // The operator's network (the fake server's namespace) is the run's egress control: no proxy on top (ADR 0035).
    expect(result.egress).toBeNull();
    expect(c.s.auditRows().find((r) => r.type === "sandcastle_run_started" && r.run_id === run.runId)?.egress).toBe(`operator:${fake.network}`);
    const ok = c.s.auditRows().find((r) => r.type === "sandcastle_run_ok" && r.run_id === run.runId);
    expect(ok?.usage).toEqual(expectedUsage(agent));
    const want = expectedUsage(agent);
    await waitFor(
      async () => (await fetch(`${base}/metrics`).then((r) => r.text())).includes(`scq_agent_tokens_total{agent="${agent}",kind="input"} ${want.input_tokens}`),
      10_000,
      () => "the run's tokens in /metrics",
    );
    const metrics = await fetch(`${base}/metrics`).then((r) => r.text());
    expect(metrics).toContain(`scq_agent_tokens_total{agent="${agent}",kind="output"} ${want.output_tokens}`);
    expect(metrics).toContain(`scq_agent_tokens_total{agent="${agent}",kind="cache_read"} ${want.cache_read_input_tokens}`);

    // The keys: nowhere but the model's request headers.
    const stored = await redisDump(c.s.prefix);
    for (const key of [SECRET_VALUE, OPENAI_SECRET]) {
      expect(stored).not.toContain(key);
      expect(filesHolding(c.s.dir.path, key)).toEqual([]); // audit, retained workspace, transcripts in HOME, the fake's log
      expect(readFileSync(join(fake.dir, "requests.jsonl"), "utf8")).not.toContain(key); // the fake says whether it matched, never what it was
    }
    await containersGone(run.runId);
  });

  it("claudeCode: while it runs, no key on any host argv or in the container's config; its CLI config is in the tmpfs home", async () => {
    const release = ".scq-release";
    fake = await FakeModel.inContainer(TEST_IMAGE, commitScript("claudeCode", `while [ ! -e ${release} ]; do sleep 0.1; done; rm -f ${release}; `));
    await c.startWorker(workerEnv(fake.network));
    const run = await c.enqueueWaiting(agentRequest("claudeCode"));
    const agentRepo = join(c.s.runsDir, run.runId, "agent", run.runId);
    await waitFor(() => fake!.modelRequests().length >= 1 && runContainerIds(run.runId).length === 1, 120_000, () => "claude's first model request");
    const ps = execFileSync("ps", ["-eo", "args"], { encoding: "utf8", maxBuffer: 64 * 1024 * 1024 });
    const claudeLines = ps.split("\n").filter((line) => line.includes("claude --print"));
    expect(claudeLines.join("\n")).toMatch(/claude --print --verbose .*--output-format stream-json --model 'test-model-claudeCode'/);
    for (const line of claudeLines) expect(line).not.toMatch(/ -p -/); // only claude's own lines: the machine's other processes may say `-p -`
    const raw = JSON.stringify(inspect(run.runId));
    for (const key of [SECRET_VALUE, OPENAI_SECRET]) {
      expect(ps).not.toContain(key);
      expect(raw).not.toContain(key);
    }
    expect(raw).not.toMatch(/ANTHROPIC_API_KEY|OPENAI_API_KEY/);
    // In the fake server's namespace (podman names it by the container's id).
    expect(inspect(run.runId).HostConfig.NetworkMode).toBe(`container:${String(inspect(fake.network.slice("container:".length)).Id)}`);
    writeFileSync(join(agentRepo, release), "");
    const result = await run.result();
    expect(result.status, result.message ?? "").toBe("ok");
  });

  it("the parallel planner with claude: plan → 2 implementers (each reviewed) → merge, a fake model answering per role", async () => {
    fake = await FakeModel.inContainer(TEST_IMAGE, {
      key: SECRET_VALUE,
      usage: USAGE,
      roles: [
        { when: "PHASE: plan", steps: [{ text: 'Two tasks.\n<plan>{"tasks":["alpha","beta"]}</plan>' }] },
        {
          when: "PHASE: implement",
          steps: [
            {
              bash: "echo '{{field:TASK}}' > impl-{{field:IMPL}}.txt && git add impl-{{field:IMPL}}.txt && git commit -q -m 'implementer {{field:IMPL}}: {{field:TASK}}' && echo done",
            },
            { text: "Implemented." },
          ],
        },
        {
          when: "PHASE: review",
          steps: [{ bash: "echo reviewed >> impl-{{field:IMPL}}.txt && git commit -q -am 'review {{field:IMPL}}' && echo done" }, { text: "Reviewed." }],
        },
        { when: "PHASE: merge", steps: [{ bash: "for b in {{field:BRANCHES}}; do git merge --no-edit -q $b; done && echo merged" }, { text: "Merged." }] },
      ],
    });
    await c.startWorker(workerEnv(fake.network));
    const base = gitIn(c.repo, "rev-parse", "HEAD");
    const run = await c.enqueueWaiting(agentRequest("claudeCode", { prompt_template_dir: PARALLEL, branch: "agent/par", parallel_implementers: 2 }));
    const result = await run.result();
    expect(result, result.message ?? "").toMatchObject({ status: "ok", merged_branch: "agent/par" });
    expect(gitIn(c.repo, "show", "agent/par:impl-1.txt")).toBe("alpha\nreviewed");
    expect(gitIn(c.repo, "show", "agent/par:impl-2.txt")).toBe("beta\nreviewed");
    const subjects = gitIn(c.repo, "log", "--format=%s", `${base}..agent/par`);
    for (const s of ["implementer 1: alpha", "implementer 2: beta", "review 1", "review 2"]) expect(subjects).toContain(s);
    // Six agent sessions (plan, 2 implement, 2 review, merge), two model turns each but the plan's one.
    expect(result.usage?.turns).toBe(11);
    expect(result.commits.length).toBeGreaterThanOrEqual(4);
    expect(existsSync(join(c.s.runsDir, run.runId, "agent"))).toBe(false);
  });
});
