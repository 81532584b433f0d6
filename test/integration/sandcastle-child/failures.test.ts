// Runs that cannot succeed end with a failed run_complete and a clear reason, never a stack trace.
import { chmodSync, cpSync, existsSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { afterEach, beforeAll, describe, expect, it } from "vitest";
import {
  FIXTURES,
  cleanup,
  finish,
  git,
  makeHome,
  makeRepo,
  requireBuiltChild,
  runChild,
  startChild,
  tempDir,
  waitFor,
  writeConfig,
  type FinishedChild,
} from "./child-harness.js";

beforeAll(requireBuiltChild);
afterEach(cleanup);

const STACK_FRAME = /\n\s+at .+\(.*:\d+:\d+\)|^\s+at /m;

/** A copy of the fixture whose agent prints a line and exits 3. */
function failingTemplate(): string {
  const template = tempDir("tpl");
  cpSync(join(FIXTURES, "failing"), template, { recursive: true });
  chmodSync(join(template, "agent.sh"), 0o755);
  return template;
}

function expectCleanFailure(out: FinishedChild, reason: string, code: number): void {
  expect(out.last.type, out.stdout).toBe("run_complete");
  expect(out.last.result).toMatchObject({ status: "failed", failure_reason: reason, merged_branch: null, commits: [] });
  expect(typeof out.last.result.message).toBe("string");
  expect(out.code).toBe(code);
  expect(out.stdout).not.toMatch(STACK_FRAME);
  expect(out.stderr).toBe("");
}

describe("sandcastle child: failures", () => {
  it("claudeCode without `claude` on PATH (noSandbox) → agent_unavailable", async () => {
    const repo = makeRepo();
    const config = writeConfig({
      request: { agent: "claudeCode", prompt_template_dir: join(FIXTURES, "commit-file"), branch: "sandcastle/no-cli", repo_workdir: repo, dry_run: true },
      env: { ANTHROPIC_API_KEY: "sk-ant-test-not-a-real-key-123" },
    });
    const out = await runChild(config, { cwd: repo, home: makeHome() });
    expectCleanFailure(out, "agent_unavailable", 1);
    expect(out.last.result.message).toContain("`claude`");
    expect(out.stdout).not.toContain("sk-ant-test-not-a-real-key-123");
    // nothing started: no branch
    expect(() => git(repo, "rev-parse", "--verify", "refs/heads/sandcastle/no-cli")).toThrow();
  });

  it.each([
    ["vercel", "@vercel/sandbox"],
    ["daytona", "@daytona/sdk"],
  ] as const)("sandbox %s without %s installed → provider_unavailable", async (sandbox, pkg) => {
    const repo = makeRepo();
    const config = writeConfig({
      request: { agent: "script", sandbox, prompt_template_dir: join(FIXTURES, "commit-file"), branch: `sandcastle/${sandbox}`, repo_workdir: repo },
    });
    const out = await runChild(config, { cwd: repo, home: makeHome() });
    expectCleanFailure(out, "provider_unavailable", 1);
    expect(out.last.result.message).toContain(pkg);
  });

  it("a bad config → invalid_payload naming the field, exit 2, no value echoed", async () => {
    const repo = makeRepo();
    const home = makeHome();
    const secret = "very-secret-value-42";

    const relative = writeConfig({
      request: { agent: "script", prompt_template_dir: "relative/dir", branch: "sandcastle/bad", repo_workdir: repo, dry_run: true },
      env: { MY_TOKEN: secret },
    });
    const out1 = await runChild(relative, { cwd: repo, home });
    expectCleanFailure(out1, "invalid_payload", 2);
    expect(out1.last.result.message).toContain("request.prompt_template_dir");
    expect(out1.last.result.branch).toBe("sandcastle/bad");

    const unsandboxed = writeConfig({
      request: { agent: "script", sandbox: "noSandbox", prompt_template_dir: join(FIXTURES, "commit-file"), branch: "sandcastle/bad", repo_workdir: repo },
    });
    const out2 = await runChild(unsandboxed, { cwd: repo, home });
    expectCleanFailure(out2, "invalid_payload", 2);
    expect(out2.last.result.message).toContain("request.sandbox");

    const badEnvName = writeConfig({
      request: { agent: "script", prompt_template_dir: join(FIXTURES, "commit-file"), branch: "sandcastle/bad", repo_workdir: repo, dry_run: true },
      env: { "not a name": secret },
    });
    const out3 = await runChild(badEnvName, { cwd: repo, home });
    expectCleanFailure(out3, "invalid_payload", 2);
    expect(out3.last.result.message).toContain("env");
    expect(out3.stdout).not.toContain(secret);

    const notJson = writeConfig({ request: {}, raw: `{"env": {"MY_TOKEN": "${secret}"` });
    const out4 = await runChild(notJson, { cwd: repo, home });
    expectCleanFailure(out4, "invalid_payload", 2);
    expect(out4.stdout).not.toContain(secret);

    const missing = join(tempDir("nofile"), "absent.json");
    const out5 = await runChild(missing, { cwd: repo, home });
    expectCleanFailure(out5, "invalid_payload", 2);
  });

  it("a template without prompt.md → invalid_payload; repo_workdir that is not a repo → invalid_payload", async () => {
    const repo = makeRepo();
    const home = makeHome();
    const template = tempDir("tpl");
    cpSync(join(FIXTURES, "commit-file", "agent.sh"), join(template, "agent.sh"));
    const noPrompt = writeConfig({
      request: { agent: "script", prompt_template_dir: template, branch: "sandcastle/np", repo_workdir: repo, dry_run: true },
    });
    const out1 = await runChild(noPrompt, { cwd: repo, home });
    expectCleanFailure(out1, "invalid_payload", 2);
    expect(out1.last.result.message).toContain("prompt.md");

    const notRepo = tempDir("plain");
    const out2 = await runChild(
      writeConfig({
        request: { agent: "script", prompt_template_dir: join(FIXTURES, "commit-file"), branch: "sandcastle/nr", repo_workdir: notRepo, dry_run: true },
      }),
      { cwd: notRepo, home },
    );
    expectCleanFailure(out2, "invalid_payload", 2);
    expect(out2.last.result.message).toContain("request.repo_workdir");
  });

  it("script agent without agent.sh → agent_unavailable", async () => {
    const repo = makeRepo();
    const template = tempDir("tpl");
    writeFileSync(join(template, "prompt.md"), "hello {{RUN_ID}}\n");
    const out = await runChild(
      writeConfig({ request: { agent: "script", prompt_template_dir: template, branch: "sandcastle/ns", repo_workdir: repo, dry_run: true } }),
      { cwd: repo, home: makeHome() },
    );
    expectCleanFailure(out, "agent_unavailable", 1);
    expect(out.last.result.message).toContain("agent.sh");
  });

  it("an agent that exits without reading a prompt bigger than a pipe → agent_failed with its exit code, not EPIPE", async () => {
    const repo = makeRepo();
    const template = failingTemplate();
    // 256 KiB cannot sit in a pipe's buffer: Sandcastle is still writing it when the agent exits.
    writeFileSync(join(template, "prompt.md"), `${"Fix it. ".repeat(32 * 1024)}\n`);
    const out = await runChild(
      writeConfig({ request: { agent: "script", prompt_template_dir: template, branch: "sandcastle/epipe", repo_workdir: repo, dry_run: true }, env: {} }),
      { cwd: repo, home: makeHome() },
    );
    expectCleanFailure(out, "agent_failed", 1);
    expect(out.last.result.message).toContain("exited with code 3");
    expect(out.last.result.message).not.toContain("EPIPE");
  });

  it("an agent that exits non-zero → agent_failed with its output in the message", async () => {
    const repo = makeRepo();
    const template = failingTemplate();
    const out = await runChild(
      writeConfig({
        request: { agent: "script", prompt_template_dir: template, branch: "sandcastle/fails", repo_workdir: repo, dry_run: true },
        env: { SOME_KEY: "secret-in-env-777" },
      }),
      { cwd: repo, home: makeHome() },
    );
    expectCleanFailure(out, "agent_failed", 1);
    expect(out.last.result.message).toContain("exited with code 3");
    expect(out.last.result.message).toContain("something broke");
  });

  it("request.branch checked out in repo_workdir itself → invalid_payload", async () => {
    const repo = makeRepo();
    const out = await runChild(
      writeConfig({ request: { agent: "script", prompt_template_dir: join(FIXTURES, "commit-file"), branch: "main", repo_workdir: repo, dry_run: true } }),
      { cwd: repo, home: makeHome() },
    );
    expectCleanFailure(out, "invalid_payload", 2);
    expect(out.last.result.message).toContain("request.branch");
  });

  it("a repo_workdir that is not a git work tree, and one with no commit yet → invalid_payload saying which", async () => {
    const template = join(FIXTURES, "commit-file");
    const plain = tempDir("not-a-repo");
    const unborn = tempDir("unborn");
    git(unborn, "init", "-q", "-b", "main");
    for (const [repo, says] of [
      [plain, "is not a git work tree"],
      [unborn, "has no commit yet (Sandcastle branches from HEAD)"],
    ] as const) {
      const request = { agent: "script", prompt_template_dir: template, branch: "agent/x", repo_workdir: repo, dry_run: true } as const;
      const out = await runChild(writeConfig({ request }), { cwd: repo, home: makeHome() });
      expectCleanFailure(out, "invalid_payload", 2);
      expect(out.last.result.message).toBe(`request.repo_workdir: ${repo} ${says}`);
    }
  });

  it("a second child on a branch another child is working on fails at once; the first is unaffected", async () => {
    const repo = makeRepo();
    const home = makeHome();
    const out = tempDir("out");
    const request = {
      agent: "script",
      prompt_template_dir: join(FIXTURES, "commit-file"),
      branch: "sandcastle/busy",
      repo_workdir: repo,
      dry_run: true,
    } as const;
    const first = startChild(writeConfig({ request, env: { OUT_DIR: out } }), { cwd: repo, home });
    await waitFor(() => existsSync(join(out, "agent.pid")), 20_000, "the first agent to start");

    const second = await runChild(writeConfig({ request }), { cwd: repo, home });
    expect(second.last.result).toMatchObject({ status: "failed", failure_reason: "agent_failed" });
    expect(second.last.result.message).toContain("in use by another run");

    writeFileSync(join(out, "release"), "");
    const done = await finish(first);
    expect(done.last.result).toMatchObject({ status: "ok", branch: "sandcastle/busy" });
    expect(done.last.result.commits).toHaveLength(1);
  });

  it("parallel run whose implementer 2 fails → agent_failed naming it, nothing merged", async () => {
    const repo = makeRepo();
    const base = git(repo, "rev-parse", "HEAD");
    const out = await runChild(
      writeConfig({
        request: {
          agent: "script",
          prompt_template_dir: join(FIXTURES, "parallel"),
          branch: "sandcastle/par-fail",
          repo_workdir: repo,
          dry_run: true,
          parallel_implementers: 2,
        },
        env: { FAIL_IMPL: "2" },
      }),
      { cwd: repo, home: makeHome() },
    );
    expectCleanFailure(out, "agent_failed", 1);
    expect(out.last.result.message).toContain("implementer 2 (sandcastle/par-fail-impl-2)");
    expect(out.last.result.message).toContain("gives up");
    expect(out.events.some((e) => e.type === "phase" && e.phase === "merge")).toBe(false);
    expect(git(repo, "rev-parse", "sandcastle/par-fail")).toBe(base);
    // implementer 1's work stays on its own branch for inspection
    expect(git(repo, "log", "--format=%s", "-1", "sandcastle/par-fail-impl-1")).toBe("review 1");
    expect(git(repo, "worktree", "list", "--porcelain").match(/^worktree /gm)).toHaveLength(1);
  });
});
