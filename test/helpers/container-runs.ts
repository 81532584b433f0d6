// Non-dry runs in real podman containers, as a test drives them: a RunScope with a repository owned by the
// containers' user, worker processes with the engine's settings, `enqueue --wait` as a process, and the
// deployment's containers removed after each test (by its label only).
import { existsSync, readdirSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { expect } from "vitest";
import { SandcastleRunResult } from "../../src/sandcastle/contract.js";
import { LABEL_DEPLOYMENT } from "../../src/sandcastle/containers/container-args.js";
import { CliProcess, lastJsonLine, stopAllCli } from "./cli.js";
import { engineEnv, giveToAgentUser, podman, TEST_IMAGE } from "./containers.js";
import { makeGitRepo, RunScope } from "./run-scope.js";

export class ContainerRuns {
  readonly s = new RunScope();
  readonly repo = join(this.s.dir.path, "repo");

  constructor() {
    makeGitRepo(this.repo);
  }

  /** After the test has shaped the repository: give it to the containers' user (ADR 0009). */
  handRepoToAgentUser(): void {
    giveToAgentUser(this.repo);
  }

  /** The env manifest the real agents' runs name (`env_manifest_name: "agents"`): their two API keys, as secrets. */
  writeAgentsManifest(): void {
    writeFileSync(join(this.s.manifestDir, "agents.json"), JSON.stringify({ project_slug: "proj", vars: ["ANTHROPIC_API_KEY", "OPENAI_API_KEY"] }));
  }

  get deployment(): string {
    return this.s.deployment;
  }

  env(extra: Record<string, string> = {}): NodeJS.ProcessEnv {
    return this.s.env({
      SANDCASTLE_BIN: "",
      SANDCASTLE_IMAGE: TEST_IMAGE,
      SANDCASTLE_CONTAINER_MEMORY: "512m",
      SANDCASTLE_CONTAINER_CPUS: "1",
      SANDCASTLE_CONTAINER_PIDS: "256",
      ...engineEnv(),
      ...extra,
    });
  }

  async startWorker(extra: Record<string, string> = {}): Promise<CliProcess> {
    const w = new CliProcess(["worker"], this.env(extra));
    await w.waitForOutput(/workers running/, 60_000);
    return w;
  }

  request(template: string, patch: Record<string, unknown> = {}, extraEnv: Record<string, string> = {}): Record<string, unknown> {
    return {
      ...this.s.request({
        session_id: `ctr-${Math.random().toString(36).slice(2, 8)}`,
        agent: "script",
        sandbox: "podman",
        dry_run: false,
        prompt_template_dir: template,
        repo_workdir: this.repo,
        branch: "agent/in-container",
        timeout_minutes: 5,
        ...patch,
      }),
      extra_env: extraEnv,
    };
  }

  /** `enqueue --wait` as a process: the run id as soon as it is printed, the result when it exits. */
  async enqueueWaiting(req: Record<string, unknown>): Promise<{ runId: string; result: () => Promise<SandcastleRunResult> }> {
    const file = join(this.s.dir.path, `req-${Math.random().toString(36).slice(2, 8)}.json`);
    writeFileSync(file, JSON.stringify(req));
    const p = new CliProcess(["enqueue", "sandcastle-run", "--request", file, "--wait", "--wait-timeout", "300"], this.env());
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

  /** The agent's own repository (RUNS_DIR/<run>/agent/<container>) once a held agent (HOLD=1) has marked it ready. */
  heldAgentRepo(): string | undefined {
    if (!existsSync(this.s.runsDir)) return undefined;
    for (const run of readdirSync(this.s.runsDir)) {
      const dir = join(this.s.runsDir, run, "agent");
      if (!existsSync(dir)) continue;
      const found = readdirSync(dir).map((n) => join(dir, n)).find((p) => existsSync(join(p, ".scq-ready")));
      if (found !== undefined) return found;
    }
    return undefined;
  }

  /** The run directory on "tmpfs" (the scope's SANDCASTLE_CONFIG_DIR). */
  runDir(runId: string): string {
    return join(this.s.configDir, `scq-run-${runId}`);
  }

  async close(): Promise<void> {
    await stopAllCli();
    // Anything a failed test left: by our label only.
    for (const id of podman(["ps", "--all", "--no-trunc", `--filter=label=${LABEL_DEPLOYMENT}=${this.deployment}`, "--format={{.ID}}"], { allowFail: true })
      .split("\n")
      .filter(Boolean)) {
      podman(["rm", "--force", "--time=0", id], { allowFail: true });
    }
    await this.s.close();
  }
}
