// The egress policy (ADR 0035) on real podman: a run's container has no network of its own; the agent reaches only
// the hosts on its allowlist, through the run's egress proxy (a unix socket mounted into the container, its
// forwarder the container's main process). All traffic stays on loopback (the fake model server is a process on
// the host's 127.0.0.1, named through SANDCASTLE_EGRESS_HOSTS) or inside the container's own namespace.
import { join, resolve } from "node:path";
import { afterEach, beforeEach, describe, expect, it } from "vitest";
import { type AGENT_CLIS } from "../../../src/sandcastle/child/agents.js";
import { runCli, waitFor } from "../../helpers/cli.js";
import { ContainerRuns } from "../../helpers/container-runs.js";
import { gitIn, containersGone, skipContainers, warmContainers } from "../../helpers/containers.js";
import { FakeModel } from "../../helpers/fake-model.js";
import { startService } from "../../helpers/http-service.js";
import { SECRET_VALUE } from "../../helpers/run-scope.js";

const COMMIT_FILE = resolve(import.meta.dirname, "../../fixtures/sandcastle/commit-file");
const PROBE = resolve(import.meta.dirname, "../../fixtures/sandcastle/egress-probe");
const OPENAI_SECRET = "sk-proj-egress-openai-secret-0123456789abcdef";
const MODEL_HOST = "fake-model.test";
type Agent = keyof typeof AGENT_CLIS;
const KEY: Record<Agent, string> = { claudeCode: SECRET_VALUE, codex: OPENAI_SECRET, pi: SECRET_VALUE, opencode: OPENAI_SECRET };

let c: ContainerRuns;
let fake: FakeModel | undefined;

beforeEach(() => {
  c = new ContainerRuns();
  c.handRepoToAgentUser();
  c.writeAgentsManifest();
});
afterEach(async () => {
  await c.close();
  fake?.stop();
  fake = undefined;
});

/** The worker's egress settings: the fake model server (on the host's loopback) is the one host allowed. */
function egressEnv(port: number, extra: Record<string, string> = {}): Record<string, string> {
  return {
    SANDCASTLE_EGRESS_ALLOW: `${MODEL_HOST}:${port}`,
    SANDCASTLE_EGRESS_HOSTS: `${MODEL_HOST}=127.0.0.1`,
    OPENAI_API_KEY: OPENAI_SECRET,
    SANDCASTLE_CONTAINER_MEMORY: "2g",
    HOME: join(c.s.dir.path, "home"),
    ...extra,
  };
}

const endpoint = (agent: Agent, url: string): Record<string, string> =>
  agent === "codex" || agent === "opencode" ? { OPENAI_BASE_URL: `${url}/v1` } : { ANTHROPIC_BASE_URL: url };

describe.skipIf(skipContainers)("the egress policy of container runs", { timeout: 300_000 }, () => {
  it.each(Object.keys(KEY) as Agent[])("%s reaches an allowed model server through the run's proxy, and commits", async (agent) => {
    fake = await FakeModel.onHost({
      key: KEY[agent],
      roles: [
        { steps: [{ bash: "echo ok > egress-{{field:WRITE}} && git add -A && git commit -q -m 'through the proxy' && echo committed" }, { text: "Done." }] },
      ],
    });
    const port = Number(new URL(fake.url).port);
    await c.startWorker(egressEnv(port));
    const url = `http://${MODEL_HOST}:${port}`;
    const run = await c.enqueueWaiting(
      c.request(COMMIT_FILE, { agent, env_manifest_name: "agents", branch: `agent/egress-${agent}`, model: "test-model" }, endpoint(agent, url)),
    );
    const result = await run.result();
    expect(result, result.message ?? "").toMatchObject({ status: "ok", failure_reason: null });
    expect(result.commits).toHaveLength(1);
    expect(fake.modelRequests().every((r) => r.key === "match")).toBe(true);
    expect(result.egress?.allowed).toBeGreaterThanOrEqual(1);
    const started = c.s.auditRows().find((r) => r.type === "sandcastle_run_started" && r.run_id === run.runId);
    expect(started?.egress).toBe("allowlist");
    await containersGone(run.runId);
  });

  it("from inside a run container: a host not allowed is refused through the proxy, a direct connection and DNS fail; each refusal audited, logged, counted", async () => {
    await c.startWorker(egressEnv(9));
    const { base } = await startService("serve", c.env({ PORT: "0" }));
    const req = c.request(PROBE, { branch: "agent/probe" });
    const run = await c.enqueueWaiting(req);
    const result = await run.result();
    expect(result, result.message ?? "").toMatchObject({ status: "ok" });
    expect(gitIn(c.repo, "show", "agent/probe:egress-report.txt").split("\n")).toEqual([
      "http via proxy: refused", "https via proxy: refused", "an address via proxy: refused", "direct tcp: ENETUNREACH", "dns: EAI_AGAIN",
    ]);
    expect(result.egress).toEqual({ allowed: 0, denied: 3, denied_hosts: ["evil.example:80", "evil.example:443", "93.184.216.34:443"] });
    const denied = c.s.auditRows().filter((r) => r.type === "sandcastle_egress_denied" && r.run_id === run.runId);
    expect(denied.map((r) => `${r.host}:${r.port}`).sort()).toEqual(["93.184.216.34:443", "evil.example:443", "evil.example:80"]);
    const logs = (await runCli(["logs", String(req.session_id)], c.env())).stdout;
    expect(logs).toContain("── egress denied: evil.example:443 (not on the run's allowlist)");
    await waitFor(
      async () => (await fetch(`${base}/metrics`).then((r) => r.text())).includes('scq_egress_connections_total{decision="denied"} 3'),
      10_000,
      () => "the denials in /metrics",
    );
  });

  it("in a spare's warm container too: the run's refusals go through the proxy the spare started, logged, audited and counted as the run's", async () => {
    await c.startWorker(egressEnv(9));
    const probe = async (branch: string) => {
      const req = c.request(PROBE, { branch });
      const run = await c.enqueueWaiting(req);
      const result = await run.result();
      expect(result, result.message ?? "").toMatchObject({ status: "ok" });
      return { run, result, logs: (await runCli(["logs", String(req.session_id)], c.env())).stdout };
    };
    const cold = await probe("agent/probe-cold");
    expect(cold.logs).not.toContain("warm one");
    // The next spare keeps a container shaped like that run, its egress proxy listening in the spare's directory.
    await waitFor(() => warmContainers(c.deployment).length === 1, 60_000, () => "a warm container");
    const warm = await probe("agent/probe-warm");
    expect(warm.logs).toContain("the run's container is the spare's warm one");
    expect(gitIn(c.repo, "show", "agent/probe-warm:egress-report.txt").split("\n")).toEqual([
      "http via proxy: refused", "https via proxy: refused", "an address via proxy: refused", "direct tcp: ENETUNREACH", "dns: EAI_AGAIN",
    ]);
    expect(warm.result.egress).toEqual({ allowed: 0, denied: 3, denied_hosts: ["evil.example:80", "evil.example:443", "93.184.216.34:443"] });
    const denied = c.s.auditRows().filter((r) => r.type === "sandcastle_egress_denied" && r.run_id === warm.run.runId);
    expect(denied).toHaveLength(3);
    expect(warm.logs).toContain("── egress denied: evil.example:443 (not on the run's allowlist)");
  });

  it("a request asking for more than the operator permits is refused at enqueue, naming the field; network open only where the operator allows it", async () => {
    const env = c.env({ SANDCASTLE_EGRESS_ALLOW: "api.anthropic.com:443", SANDCASTLE_EGRESS_PERMIT: "api.anthropic.com:443,*.githubusercontent.com" });
    const enqueue = (patch: Record<string, unknown>) =>
      runCli(["enqueue", "sandcastle-run", "--request", "-"], env, { input: JSON.stringify(c.request(COMMIT_FILE, patch)) });
    const wider = await enqueue({ egress_allow: ["api.anthropic.com:443", "evil.example"] });
    expect(wider.code).toBe(1);
    expect(wider.stderr).toMatch(
      /egress_allow: evil\.example is more than this deployment permits \(SANDCASTLE_EGRESS_PERMIT: api\.anthropic\.com:443, \*\.githubusercontent\.com\)/,
    );
    const open = await enqueue({ network: "open" });
    expect(open.code).toBe(1);
    expect(open.stderr).toMatch(/network: "open" .* SANDCASTLE_EGRESS_OPEN=1/);
    const within = await enqueue({ egress_allow: ["raw.githubusercontent.com:443"] });
    expect(within.code, within.stderr).toBe(0);
  });
});
