// The child's container sandboxes where no engine answers (no podman needed): docker's CLI with no daemon,
// a config without the worker's sandbox settings. Each fails provider_unavailable before any worktree.
import { spawnSync } from "node:child_process";
import { join } from "node:path";
import { afterEach, beforeAll, describe, expect, it } from "vitest";
import type { SandboxSettings } from "../../../src/sandcastle/contract.js";
import { FIXTURES, cleanup, git, makeHome, makeRepo, requireBuiltChild, runChild, writeConfig } from "./child-harness.js";

beforeAll(requireBuiltChild);
afterEach(cleanup);

const SECRET = "sk-ant-api03-container-sandbox-test-0123456789";
const settings = (patch: Partial<SandboxSettings> = {}): SandboxSettings => ({
  default_image: "localhost/sandcastle-queue-agent:latest",
  container_cli: null,
  engine_env: {},
  limits: { memory: "512m", cpus: 1, pids: 128 },
  deployment: "{test}@child",
  providers_dir: null,
  network: null,
  agent_idle_seconds: 600,
  ...patch,
});

function configWith(repo: string, sandbox: string, sandboxSettings: SandboxSettings | undefined): string {
  const config = {
    version: 1,
    run_id: `run-${Math.random().toString(36).slice(2, 10)}`,
    request: {
      session_id: "s",
      env_manifest_name: "m",
      agent: "script",
      sandbox,
      dry_run: false,
      prompt_template_dir: join(FIXTURES, "commit-file"),
      branch: "agent/ctr",
      repo_workdir: repo,
    },
    env: { ANTHROPIC_API_KEY: SECRET },
    ...(sandboxSettings ? { sandbox_settings: sandboxSettings } : {}),
  };
  return writeConfig({ request: {}, raw: JSON.stringify(config) });
}

const dockerCli = spawnSync("sh", ["-c", "command -v docker"], { encoding: "utf8" }).stdout.trim();

describe("container sandboxes without an engine", () => {
  it.skipIf(dockerCli === "")("docker whose daemon does not answer → provider_unavailable with the engine's own words, nothing started", async () => {
    const repo = makeRepo();
    const config = configWith(repo, "docker", settings({ engine_env: { DOCKER_HOST: "unix:///nonexistent/scq-child-test.sock" } }));
    const out = await runChild(config, { cwd: repo, home: makeHome() });
    expect(out.last.result).toMatchObject({ status: "failed", failure_reason: "provider_unavailable" });
    expect(out.last.result.message).toMatch(/sandbox "docker": the engine did not answer .*Cannot connect to the Docker daemon/);
    expect(out.stdout).not.toContain(SECRET);
    expect(() => git(repo, "rev-parse", "--verify", "--quiet", "refs/heads/agent/ctr")).toThrow();
  });

  it("a SANDCASTLE_CONTAINER_CLI that is not there → provider_unavailable naming it", async () => {
    const repo = makeRepo();
    const out = await runChild(configWith(repo, "podman", settings({ container_cli: "/nonexistent/podman" })), { cwd: repo, home: makeHome() });
    expect(out.last.result).toMatchObject({ status: "failed", failure_reason: "provider_unavailable" });
    expect(out.last.result.message).toBe('sandbox "podman": SANDCASTLE_CONTAINER_CLI (/nonexistent/podman) is not an executable file');
  });

  it("a config without the worker's sandbox settings → provider_unavailable, saying so", async () => {
    const repo = makeRepo();
    const out = await runChild(configWith(repo, "podman", undefined), { cwd: repo, home: makeHome() });
    expect(out.last.result).toMatchObject({ status: "failed", failure_reason: "provider_unavailable" });
    expect(out.last.result.message).toMatch(/needs the worker's sandbox settings/);
  });
});
