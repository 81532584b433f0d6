// `sandbox: "custom:<name>"` through real workers, the real child and Sandcastle: a provider module in
// SANDCASTLE_PROVIDERS_DIR runs a dry run end to end (a bind-mount one and an isolated one); an unknown
// name is refused at enqueue.
import { existsSync, mkdirSync, writeFileSync } from "node:fs";
import { join, resolve } from "node:path";
import { afterEach, beforeEach, describe, expect, it } from "vitest";
import { SandcastleRunResult } from "../../../src/sandcastle/contract.js";
import { CliProcess, lastJsonLine, runCli, stopAllCli } from "../../helpers/cli.js";
import { gitOut, makeGitRepo, RunScope } from "../../helpers/run-scope.js";

const PROVIDERS = resolve(import.meta.dirname, "../../fixtures/providers");
const COMMIT_FILE = resolve(import.meta.dirname, "../../fixtures/sandcastle/commit-file");

let s: RunScope;
let repo: string;
let home: string;

beforeEach(async () => {
  s = new RunScope();
  repo = join(s.dir.path, "repo");
  makeGitRepo(repo);
  // The bind-mount provider (local-process) runs commands on this host: Sandcastle's `git config --global` lands in this HOME.
  home = join(s.dir.path, "home");
  mkdirSync(home);
  writeFileSync(join(s.outDir, "release"), ""); // commit-file's agent, given OUT_DIR, commits at once instead of waiting for it
  const w = new CliProcess(["worker"], env());
  await w.waitForOutput(/workers running/, 60_000);
});
afterEach(async () => {
  await stopAllCli();
  await s.close();
});

function env(): NodeJS.ProcessEnv {
  return s.env({ SANDCASTLE_BIN: "", SANDCASTLE_PROVIDERS_DIR: PROVIDERS, HOME: home });
}

async function runWait(request: object): Promise<{ code: number | null; stderr: string; result: SandcastleRunResult | null }> {
  const res = await runCli(["enqueue", "sandcastle-run", "--request", "-", "--wait"], env(), { input: JSON.stringify(request), timeoutMs: 120_000 });
  const parsed = SandcastleRunResult.safeParse(lastJsonLine(res.stdout));
  return { code: res.code, stderr: res.stderr, result: parsed.success ? parsed.data : null };
}

describe("custom sandbox providers", { timeout: 120_000 }, () => {
  it("custom:local-process (Sandcastle's bind-mount example) runs a dry run end to end: ok, the commit on the branch", async () => {
    const out = await runWait(
      s.request({ session_id: "custom-1", sandbox: "custom:local-process", prompt_template_dir: COMMIT_FILE, repo_workdir: repo, branch: "agent/custom-1" }),
    );
    expect(out.code, out.stderr).toBe(0);
    expect(out.result).toMatchObject({ status: "ok", branch: "agent/custom-1", failure_reason: null });
    expect(out.result!.commits).toHaveLength(1);
    expect(gitOut(repo, "rev-parse", "agent/custom-1")).toBe(out.result!.commits[0]!.sha);
    expect(gitOut(repo, "show", "--name-only", "--format=", "agent/custom-1")).toBe("hello-custom-1.txt");
    expect(s.auditRows().find((r) => r.type === "sandcastle_run_started")).toMatchObject({ sandbox: "custom:local-process" });
  });

  it("custom:temp-dir (Sandcastle's isolated example) runs a dry run end to end: the repository synced in, the commit synced out onto the branch", async () => {
    const out = await runWait(
      s.request({ session_id: "custom-iso", sandbox: "custom:temp-dir", prompt_template_dir: COMMIT_FILE, repo_workdir: repo, branch: "agent/custom-iso" }),
    );
    expect(out.code, out.stderr).toBe(0);
    expect(out.result).toMatchObject({ status: "ok", branch: "agent/custom-iso", failure_reason: null });
    expect(out.result!.commits).toHaveLength(1);
    expect(gitOut(repo, "rev-parse", "agent/custom-iso")).toBe(out.result!.commits[0]!.sha);
    expect(gitOut(repo, "show", "--name-only", "--format=%s", "agent/custom-iso")).toBe("agent: add hello-custom-iso.txt\n\nhello-custom-iso.txt");
    expect(gitOut(repo, "rev-parse", "agent/custom-iso~1")).toBe(gitOut(repo, "rev-parse", "main"));
    // Its commands ran in the sandbox's own HOME: Sandcastle's `git config --global` stayed there (custom:local-process writes the worker's).
    expect(existsSync(join(home, ".gitconfig"))).toBe(false);
    expect(s.auditRows().find((r) => r.type === "sandcastle_run_started")).toMatchObject({ sandbox: "custom:temp-dir" });
  });

  it.each([
    ["custom:no-such-provider", /sandbox: no provider "no-such-provider" in .*no-such-provider\.js, no-such-provider\.mjs/],
    ["custom:../local-process", /sandbox: .*plain name/],
  ])("%s is refused at enqueue, naming the field; nothing is enqueued", async (sandbox, message) => {
    const res = await runCli(["enqueue", "sandcastle-run", "--request", "-"], env(), { input: JSON.stringify(s.request({ sandbox, repo_workdir: repo })) });
    expect(res.code).toBe(1);
    expect(res.stderr).toMatch(message);
    expect(await s.queue.getJobCounts("waiting", "active", "completed", "failed")).toEqual({ waiting: 0, active: 0, completed: 0, failed: 0 });
  });

  it.each([
    ["custom:not-a-factory", /must export a provider factory as its default export/],
    ["custom:host-provider", /createBindMountSandboxProvider or createIsolatedSandboxProvider \(got a no-sandbox provider\)/],
  ])("%s fails the run provider_unavailable before any worktree", async (sandbox, message) => {
    const out = await runWait(s.request({ sandbox, prompt_template_dir: COMMIT_FILE, repo_workdir: repo, branch: "agent/custom-bad" }));
    expect(out.result).toMatchObject({ status: "failed", failure_reason: "provider_unavailable" });
    expect(out.result!.message).toMatch(message);
    expect(() => gitOut(repo, "rev-parse", "--verify", "--quiet", "refs/heads/agent/custom-bad")).toThrow();
  });
});
