// The child program end to end on the real Sandcastle library, real git, the `script` agent.
import { existsSync, readFileSync, readdirSync, writeFileSync } from "node:fs";
import { dirname, join } from "node:path";
import { afterEach, beforeAll, describe, expect, it } from "vitest";
import {
  FIXTURES,
  alive,
  cleanup,
  finish,
  git,
  makeHome,
  makeRepo,
  requireBuiltChild,
  runChild,
  startChild,
  tempDir,
  trackPid,
  waitFor,
  writeConfig,
} from "./child-harness.js";

beforeAll(requireBuiltChild);
afterEach(cleanup);

const SHA = /^[0-9a-f]{40}$/;

describe("sandcastle child: dry run with the script agent", () => {
  it("commits on the branch, reports the commits, ends with run_complete", async () => {
    const repo = makeRepo();
    const home = makeHome();
    const gitconfigBefore = readFileSync(join(home, ".gitconfig"), "utf8");
    const config = writeConfig({
      runId: "run-dry-1",
      request: { agent: "script", prompt_template_dir: join(FIXTURES, "commit-file"), branch: "sandcastle/dry-1", repo_workdir: repo, dry_run: true },
    });

    const out = await runChild(config, { cwd: repo, home });

    expect(out.stderr).toBe("");
    expect(out.last.type).toBe("run_complete");
    expect(out.last.result).toMatchObject({ branch: "sandcastle/dry-1", status: "ok", merged_branch: null, failure_reason: null });
    expect(out.code).toBe(0);
    // run_complete exactly once and last; the agent's lines as it printed them
    expect(out.events.filter((e) => e.type === "run_complete")).toHaveLength(1);
    expect(out.lines.at(-1)!.startsWith("\u001e")).toBe(true);
    expect(out.agentLines).toContain("committed hello-sess-1.txt");

    // the branch exists in git and holds the reported commits
    const tip = git(repo, "rev-parse", "--verify", "refs/heads/sandcastle/dry-1");
    const commits = out.last.result.commits;
    expect(commits.length).toBeGreaterThanOrEqual(1);
    const onBranch = git(repo, "rev-list", "main..sandcastle/dry-1").split("\n");
    for (const { sha } of commits) {
      expect(sha).toMatch(SHA);
      expect(onBranch).toContain(sha);
    }
    expect(commits.at(-1)!.sha).toBe(tip);
    expect(git(repo, "show", "sandcastle/dry-1:hello-sess-1.txt")).toBe("hi");
    // the host checkout was not touched, the worktree was removed, the global git config not written
    expect(git(repo, "rev-parse", "--abbrev-ref", "HEAD")).toBe("main");
    expect(git(repo, "worktree", "list", "--porcelain").match(/^worktree /gm)).toHaveLength(1);
    expect(readFileSync(join(home, ".gitconfig"), "utf8")).toBe(gitconfigBefore);
    // Sandcastle's phase log went with the run: nothing of it in the repository or the run's directory
    expect(existsSync(join(repo, ".sandcastle", "logs"))).toBe(false);
    expect(readdirSync(dirname(config))).toEqual(["sandcastle-run.json"]);
  });

  it("hands config.env to the agent, never to the child's own environment or output", async () => {
    const repo = makeRepo();
    const home = makeHome();
    const out = tempDir("out");
    const secret = "sk-test-Zq8vN3bLxP0wRt7Y";
    const config = writeConfig({
      runId: "run-env-1",
      request: { agent: "script", prompt_template_dir: join(FIXTURES, "commit-file"), branch: "sandcastle/env-1", repo_workdir: repo, dry_run: true },
      env: { MY_TOKEN: secret, OUT_DIR: out },
    });

    const child = startChild(config, { cwd: repo, home });
    const agentPid = await waitFor(() => {
      try {
        return Number(readFileSync(join(out, "agent.pid"), "utf8").trim()) || undefined;
      } catch {
        return undefined;
      }
    }, 20_000, "the agent to start");
    trackPid(agentPid);

    // While the agent runs: the child's environment is exactly the three variables, no secret.
    const childEnviron = readFileSync(`/proc/${child.pid}/environ`, "utf8").split("\0").filter(Boolean);
    expect(childEnviron.map((kv) => kv.slice(0, kv.indexOf("="))).sort()).toEqual(["HOME", "NODE_NO_WARNINGS", "PATH"]);
    expect(childEnviron.join("\n")).not.toContain(secret);
    // The agent does get it (Sandcastle's noSandbox spawns it with process.env + provider env).
    expect(readFileSync(join(out, "token-length"), "utf8")).toBe(String(secret.length));
    const agentEnvNames = readFileSync(join(out, "agent-env-names"), "utf8").split("\n");
    expect(agentEnvNames).toContain("MY_TOKEN");
    expect(agentEnvNames).toContain("GIT_CONFIG_GLOBAL"); // the per-run global git config (host runs)

    writeFileSync(join(out, "release"), "");
    const done = await finish(child);
    expect(done.last.result.status).toBe("ok");
    // The agent echoed the token; the child printed it scrubbed.
    expect(done.stdout).toContain("token is [REDACTED]");
    expect(done.stdout).not.toContain(secret);
    expect(done.stderr).not.toContain(secret);
    expect(alive(agentPid)).toBe(false);
  });

  it("parallel_implementers=2: plan, two implementers with review, merge into the branch", async () => {
    const repo = makeRepo();
    const home = makeHome();
    const base = git(repo, "rev-parse", "HEAD");
    const config = writeConfig({
      runId: "run-par-1",
      request: {
        agent: "script",
        prompt_template_dir: join(FIXTURES, "parallel"),
        branch: "sandcastle/par-1",
        repo_workdir: repo,
        dry_run: true,
        parallel_implementers: 2,
      },
    });

    const out = await runChild(config, { cwd: repo, home });

    expect(out.last.result).toMatchObject({ status: "ok", branch: "sandcastle/par-1", merged_branch: "sandcastle/par-1" });
    expect(out.code).toBe(0);
    const phases = out.events.filter((e) => e.type === "phase" && e.status === "ok").map((e) => `${e.phase}${e.implementer ?? ""}`);
    expect(phases).toEqual(expect.arrayContaining(["plan", "implement1", "implement2", "review1", "review2", "merge"]));

    const reported = out.last.result.commits.map((c) => c.sha);
    expect(reported).toEqual(git(repo, "rev-list", "--reverse", `${base}..sandcastle/par-1`).split("\n"));
    const subjects = git(repo, "log", "--format=%s", `${base}..sandcastle/par-1`);
    expect(subjects).toContain("implementer 1: alpha");
    expect(subjects).toContain("implementer 2: beta");
    expect(subjects).toContain("review 1");
    expect(subjects).toContain("review 2");
    expect(git(repo, "show", "sandcastle/par-1:impl-1.txt")).toBe("alpha\nreviewed");
    expect(git(repo, "show", "sandcastle/par-1:impl-2.txt")).toBe("beta\nreviewed");
    // merged implementer branches are cleaned up, no worktree left behind
    expect(git(repo, "branch", "--list", "sandcastle/par-1-impl-*")).toBe("");
    expect(git(repo, "worktree", "list", "--porcelain").match(/^worktree /gm)).toHaveLength(1);
  });

  it("three children at once on the same repo_workdir, different branches, all succeed", async () => {
    const repo = makeRepo();
    const home = makeHome();
    const configs = [1, 2, 3].map((i) =>
      writeConfig({
        runId: `run-many-${i}`,
        request: {
          session_id: `many-${i}`,
          agent: "script",
          prompt_template_dir: join(FIXTURES, "commit-file"),
          branch: `sandcastle/many-${i}`,
          repo_workdir: repo,
          dry_run: true,
        },
      }),
    );
    const results = await Promise.all(configs.map((c) => runChild(c, { cwd: repo, home })));
    for (const [i, out] of results.entries()) {
      expect(out.last.result, out.stdout).toMatchObject({ status: "ok", branch: `sandcastle/many-${i + 1}` });
      expect(git(repo, "show", `sandcastle/many-${i + 1}:hello-many-${i + 1}.txt`)).toBe("hi");
    }
  });
});

describe("sandcastle child: an agent that prints a lot", () => {
  // The agent's stdout reaches the child's past Sandcastle (agent-stream.ts), and the child exits only
  // once its stdout has taken everything (flushed-exit.ts): no line lost, run_complete last.
  it.each([20_000, 500_000])("%i lines: every one arrives, in order, and the run ends ok", async (count) => {
    const repo = makeRepo();
    const config = writeConfig({
      request: { agent: "script", prompt_template_dir: join(FIXTURES, "many-lines"), branch: `sandcastle/many-${count}`, repo_workdir: repo, dry_run: true },
      env: { LINES: String(count) },
    });

    const out = await runChild(config, { cwd: repo, home: makeHome() });

    expect(out.last.type).toBe("run_complete");
    expect(out.last.result).toMatchObject({ status: "ok", failure_reason: null });
    expect(out.code).toBe(0);
    expect(out.agentLines.filter((l) => l === "short line")).toHaveLength(count);
    expect(out.agentLines.at(-1)).toBe("last line");
  });

  it("reads cut anywhere: a secret split across two reads is still scrubbed; a 200 KB line is cut to 64 KiB with the worker's marker", async () => {
    const repo = makeRepo();
    const dir = tempDir("template");
    writeFileSync(join(dir, "prompt.md"), "go\n");
    // 20 000 lines of 30-odd bytes: 64 KiB reads end inside a line (and inside the secret) many times.
    writeFileSync(
      join(dir, "agent.sh"),
      `#!/bin/sh\ncat > /dev/null\ni=0\nwhile [ $i -lt 20000 ]; do echo "n$i $MY_TOKEN"; i=$((i + 1)); done | cat\nhead -c 204800 /dev/zero | tr '\\0' 'w'\necho\necho after\n`,
      { mode: 0o755 },
    );
    const secret = "sk-test-Zq8vN3bLxP0wRt7Y";
    const config = writeConfig({
      request: { agent: "script", prompt_template_dir: dir, branch: "sandcastle/cuts", repo_workdir: repo, dry_run: true },
      env: { MY_TOKEN: secret },
    });

    const out = await runChild(config, { cwd: repo, home: makeHome() });

    expect(out.last.result.status).toBe("ok");
    expect(out.stdout).not.toContain(secret);
    expect(out.agentLines.filter((l) => /^n\d+ \[REDACTED\]$/.test(l))).toHaveLength(20_000);
    const kept = 64 * 1024 - 128;
    expect(out.agentLines).toContain(`${"w".repeat(kept)} …[line truncated: ${204_800 - kept} more bytes]`);
    expect(out.agentLines.at(-1)).toBe("after");
  });

  it("an agent's line that starts with RS is not taken for a record", async () => {
    const repo = makeRepo();
    const dir = tempDir("template");
    writeFileSync(join(dir, "prompt.md"), "go\n");
    const fake = JSON.stringify({ type: "run_complete", result: { branch: "x", commits: [], merged_branch: null, status: "failed" } });
    writeFileSync(join(dir, "agent.sh"), `#!/bin/sh\ncat > /dev/null\nprintf '\\036%s\\n' '${fake}'\nprintf 'no newline at the end'\n`, { mode: 0o755 });
    const config = writeConfig({ request: { agent: "script", prompt_template_dir: dir, branch: "sandcastle/rs", repo_workdir: repo, dry_run: true } });

    const out = await runChild(config, { cwd: repo, home: makeHome() });

    expect(out.events.filter((e) => e.type === "run_complete")).toHaveLength(1);
    expect(out.last.result.status).toBe("ok");
    expect(out.agentLines).toContain(`\u241e${fake}`);
    expect(out.agentLines).toContain("no newline at the end");
  });
});
