// The container provider's handle contract on real podman, called the way Sandcastle calls it: exec with
// streamed lines, stdin and cwd; files in and out (the tmpfs home included, binary-safe); sudo refused;
// close ends the container through its server and removes its secret file (collect() waits for that); disposeSync
// removes what is still open; a container ends itself at the run's end; a container started early (ADR 0052) is the
// one create() gets when it fits, and is removed when it does not or when nobody takes it.
import { spawnSync } from "node:child_process";
import { chmodSync, existsSync, mkdirSync, mkdtempSync, readFileSync, rmSync, statSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join, resolve } from "node:path";
import { afterEach, describe, expect, it } from "vitest";
import type { BindMountCreateOptions, BindMountSandboxHandle } from "@ai-hero/sandcastle";
import { ContainerSandbox } from "../../../src/sandcastle/child/container-provider.js";
import { hardenHostGit } from "../../../src/sandcastle/child/container-user.js";
import { resolveContainerCli } from "../../../src/sandcastle/containers/container-cli.js";
import { waitFor } from "../../helpers/cli.js";
import { engineEnv, giveToAgentUser, inspect, containersGone, runContainerIds, skipContainers, TEST_IMAGE } from "../../helpers/containers.js";
import { gitOut, makeGitRepo } from "../../helpers/git-repo.js";

const dirs: string[] = [];
const sandboxes: ContainerSandbox[] = [];
const envBefore = { ...process.env };
afterEach(() => {
  for (const s of sandboxes.splice(0)) s.disposeSync();
  for (const d of dirs.splice(0)) rmSync(d, { recursive: true, force: true });
  for (const name of Object.keys(process.env)) if (name.startsWith("GIT_CONFIG_") && !(name in envBefore)) delete process.env[name];
});

const BRANCH = "agent/provider";
/** Each container's main process, as the build leaves it (the child mounts the same directory). */
const MAIN_DIR = resolve(import.meta.dirname, "../../../dist/src/sandcastle/container-main");

/** A host repository with the phase's branch; `worktree` stands for Sandcastle's (never mounted), `agentRepo` is where the agent works. */
function setup(
  runId: string,
  endsBy = Date.now() + 600_000,
): { sandbox: ContainerSandbox; runDir: string; worktree: string; agentRepo: (name: string) => string } {
  const root = mkdtempSync(join(tmpdir(), "scq-provider-"));
  dirs.push(root);
  const runDir = join(root, "run");
  const worktree = join(root, "worktree");
  const template = join(root, "template");
  const repo = join(root, "repo");
  const workDir = join(root, "agent");
  for (const d of [runDir, worktree, template]) mkdirSync(d);
  chmodSync(runDir, 0o700);
  makeGitRepo(repo);
  gitOut(repo, "branch", BRANCH);
  giveToAgentUser(repo);
  hardenHostGit(repo, "podman"); // as the child does before its first git call
  const cli = resolveContainerCli("podman", { containerCli: null, engineEnv: engineEnv(), path: process.env.PATH, home: process.env.HOME })!;
  const sandbox = new ContainerSandbox({
    cli,
    runId,
    runDir,
    image: TEST_IMAGE,
    user: { uid: process.getuid?.() === 0 ? 1000 : process.getuid!(), gid: process.getuid?.() === 0 ? 1000 : process.getgid!() },
    limits: { memory: "256m", cpus: 1, pids: 64 },
    network: "none",
    deployment: "{provider-test}@local",
    templateDir: template,
    repo,
    commonDir: join(repo, ".git"),
    runBranch: BRANCH,
    workDir,
    homeFiles: [{ path: ".config/agent/settings.json", content: '{"endpoint":"http://127.0.0.1:8080"}\n' }],
    endsBy,
    mainDir: MAIN_DIR,
  });
  sandboxes.push(sandbox);
  return { sandbox, runDir, worktree, agentRepo: (name) => join(workDir, name) };
}

async function open(sandbox: ContainerSandbox, worktree: string, env: Record<string, string>, branch = BRANCH): Promise<BindMountSandboxHandle> {
  const provider = sandbox.provider({ branch, worktreePath: worktree }) as unknown as {
    create(o: BindMountCreateOptions): Promise<BindMountSandboxHandle>;
  };
  return provider.create({ worktreePath: worktree, hostRepoPath: worktree, mounts: [{ hostPath: worktree, sandboxPath: "/home/agent/workspace" }], env });
}

describe.skipIf(skipContainers)("container provider handle (real podman)", { timeout: 180_000 }, () => {
  it("exec streams lines, takes stdin and cwd, sees the env only through the sourced file", async () => {
    const runId = `run-provider-${Math.random().toString(36).slice(2, 8)}`;
    const { sandbox, worktree, agentRepo } = setup(runId);
    const handle = await open(sandbox, worktree, { GREETING: "it's a $(quoted) value" });
    expect(handle.worktreePath).toBe("/home/agent/workspace");

    const lines: string[] = [];
    const streamed = await handle.exec('printf "%s\\n" "$GREETING"; pwd; cat; echo err >&2; exit 3', {
      onLine: (l) => lines.push(l),
      stdin: "from stdin\n",
      cwd: "/tmp",
    });
    expect(lines).toEqual(["it's a $(quoted) value", "/tmp", "from stdin"]);
    expect(streamed).toMatchObject({ exitCode: 3, stderr: "err\n" });
    expect(streamed.stdout).toBe("it's a $(quoted) value\n/tmp\nfrom stdin");

    const buffered = await handle.exec("id -u; echo hi > made-inside.txt");
    expect(buffered).toEqual({ stdout: `${process.getuid?.() === 0 ? 1000 : process.getuid!()}\n`, stderr: "", exitCode: 0 });
    expect(readFileSync(join(agentRepo(runId), "made-inside.txt"), "utf8")).toBe("hi\n");
    expect(existsSync(join(worktree, "made-inside.txt"))).toBe(false);

    expect(await handle.exec("true", { sudo: true })).toMatchObject({ exitCode: 1, stderr: expect.stringMatching(/sudo is not available/) });
    // The agent CLI's config file is in the container's tmpfs home, the agent's to read; not in its repository.
    expect(await handle.exec("cat ~/.config/agent/settings.json")).toMatchObject({ exitCode: 0, stdout: '{"endpoint":"http://127.0.0.1:8080"}\n' });
    expect(existsSync(join(agentRepo(runId), ".config"))).toBe(false);
    await handle.close();
  });

  it("copies files in and out, the tmpfs home included, byte for byte; a missing file is an error", async () => {
    const runId = `run-provider-${Math.random().toString(36).slice(2, 8)}`;
    const { sandbox, worktree } = setup(runId);
    const handle = await open(sandbox, worktree, {});
    const bytes = Buffer.from([...Array(256).keys()].flatMap((b) => [b, 10, 0]));
    const src = join(dirs[0]!, "blob.bin");
    writeFileSync(src, bytes);
    await handle.copyFileIn(src, "/home/agent/.claude/projects/p/session.jsonl");
    const back = join(dirs[0]!, "out", "nested", "session.jsonl");
    await handle.copyFileOut("/home/agent/.claude/projects/p/session.jsonl", back);
    expect(readFileSync(back).equals(bytes)).toBe(true);
    await expect(handle.copyFileOut("/home/agent/nope.jsonl", join(dirs[0]!, "nope"))).rejects.toThrow(/copying out of the container failed: .*No such file/);
    expect(existsSync(join(dirs[0]!, "nope"))).toBe(false);
    await handle.close();
  });

  it("close removes the container and its secret file, while collect() may take the branch; disposeSync removes what is still open", async () => {
    const runId = `run-provider-${Math.random().toString(36).slice(2, 8)}`;
    const { sandbox, runDir, worktree } = setup(runId);
    const first = await open(sandbox, worktree, { TOKEN_X: "value-1" });
    await open(sandbox, worktree, { TOKEN_X: "value-2" });
    expect(runContainerIds(runId)).toHaveLength(2);
    expect(existsSync(join(runDir, `${runId}.env`)) && existsSync(join(runDir, `${runId}-2.env`))).toBe(true);
    // close() starts the removal; collect() (not called here: this is the handle alone) would wait for it.
    await first.close();
    await waitFor(() => runContainerIds(runId).length === 1 && !existsSync(join(runDir, `${runId}.env`)), 30_000, () => "close's removal of the first");
    sandbox.disposeSync();
    await containersGone(runId);
    expect(existsSync(join(runDir, `${runId}-2.env`))).toBe(false);
  });

  it("close ends the container through its server: a process the agent left in a session of its own is dead once collect() returns", async () => {
    const runId = `run-provider-${Math.random().toString(36).slice(2, 8)}`;
    const { sandbox, worktree } = setup(runId);
    const handle = await open(sandbox, worktree, {});
    // As an agent would: a process outside every exec's process group (its own session), still running when the agent is done.
    const seconds = 600 + Math.floor(Math.random() * 1000);
    expect((await handle.exec(`setsid sleep ${seconds} >/dev/null 2>&1 </dev/null &`)).exitCode).toBe(0);
    const alive = () => spawnSync("pgrep", ["-f", `^sleep ${seconds}$`]).status === 0;
    await waitFor(alive, 10_000, () => "the agent's process to run");
    await handle.close();
    // collect() waits for the container's end before it reads the agent's repository (its branch is not taken here: no host worktree).
    await sandbox.collect({ branch: BRANCH, worktreePath: worktree }).catch(() => undefined);
    expect(alive()).toBe(false);
    await containersGone(runId);
  });

  it("a container ends itself at the run's end (endsBy), removed with nobody calling close or dispose", async () => {
    const runId = `run-provider-${Math.random().toString(36).slice(2, 8)}`;
    const endsBy = Date.now() + 8000;
    const { sandbox, worktree } = setup(runId, endsBy);
    await open(sandbox, worktree, {});
    expect(runContainerIds(runId)).toHaveLength(1);
    // Its main process: the exec server, ending itself after the seconds left (no egress policy: no forwarder).
    const cmd = inspect(runId).Config.Cmd as string[];
    expect(cmd).toEqual(["/run/sandcastle-queue/main/main.mjs", expect.stringMatching(/^--seconds=\d+$/), "--exec=/run/sandcastle-queue/exec.sock"]);
    expect(Number(cmd[1]!.slice("--seconds=".length))).toBeLessThanOrEqual(8);
    await waitFor(() => runContainerIds(runId).length === 0, 30_000, () => "the container to end itself");
    // Not before its time (a second of rounding up), and soon after it.
    expect(Date.now()).toBeGreaterThanOrEqual(endsBy - 1000);
    expect(Date.now()).toBeLessThan(endsBy + 20_000);
  });

  it("a container started early is the one create() gets: on a branch the host made meanwhile, with the phase's env given before any command", async () => {
    const runId = `run-provider-${Math.random().toString(36).slice(2, 8)}`;
    const { sandbox, runDir, worktree, agentRepo } = setup(runId);
    const repo = join(dirs.at(-1)!, "repo");
    const head = gitOut(repo, "rev-parse", "HEAD");
    sandbox.startEarly("agent/early", head);
    await waitFor(() => runContainerIds(runId).length === 1, 60_000, () => "the early container");
    // As Sandcastle's worktree does for a new branch, while the container comes up.
    gitOut(repo, "branch", "agent/early", head);
    const handle = await open(sandbox, worktree, { TOKEN_X: "early-value" }, "agent/early");
    expect(runContainerIds(runId)).toHaveLength(1);
    expect(await handle.exec('printf "%s %s\\n" "$TOKEN_X" "$HOME"; git rev-parse --abbrev-ref HEAD; git rev-parse HEAD')).toMatchObject({
      exitCode: 0,
      stdout: `early-value /home/agent\nagent/early\n${head}\n`,
    });
    expect(statSync(join(runDir, `${runId}.env`)).mode & 0o777).toBe(0o400);
    expect(existsSync(join(agentRepo(runId), ".git"))).toBe(true);
    await handle.close();
    await sandbox.collect({ branch: "agent/early", worktreePath: worktree }).catch(() => undefined);
    await containersGone(runId);
  });

  it("an early container that does not fit is removed: the host's branch moved meanwhile, so the phase gets a container of its own", async () => {
    const runId = `run-provider-${Math.random().toString(36).slice(2, 8)}`;
    const { sandbox, worktree, agentRepo } = setup(runId);
    const repo = join(dirs.at(-1)!, "repo");
    const head = gitOut(repo, "rev-parse", "HEAD");
    sandbox.startEarly(BRANCH, head);
    await waitFor(() => runContainerIds(runId).length === 1, 60_000, () => "the early container");
    writeFileSync(join(repo, "moved.txt"), "moved\n");
    gitOut(repo, "add", "moved.txt");
    gitOut(repo, "commit", "-q", "-m", "moved");
    gitOut(repo, "branch", "-f", BRANCH, "HEAD");
    const moved = gitOut(repo, "rev-parse", "HEAD");
    const handle = await open(sandbox, worktree, {});
    expect(await handle.exec("git rev-parse HEAD")).toMatchObject({ exitCode: 0, stdout: `${moved}\n` });
    expect(runContainerIds(runId)).toHaveLength(1);
    expect((inspect(`${runId}-2`).State as { Running: boolean }).Running).toBe(true);
    expect(existsSync(agentRepo(runId))).toBe(false);
    await handle.close();
    await sandbox.collect({ branch: BRANCH, worktreePath: worktree }).catch(() => undefined);
    await containersGone(runId);
  });

  it("disposeSync removes an early container nobody took, and its agent's repository", async () => {
    const runId = `run-provider-${Math.random().toString(36).slice(2, 8)}`;
    const { sandbox, runDir, agentRepo } = setup(runId);
    sandbox.startEarly(BRANCH, gitOut(join(dirs.at(-1)!, "repo"), "rev-parse", "HEAD"));
    await waitFor(() => runContainerIds(runId).length === 1, 60_000, () => "the early container");
    sandbox.disposeSync();
    await containersGone(runId);
    expect(existsSync(agentRepo(runId))).toBe(false);
    expect(existsSync(join(runDir, `${runId}.env`))).toBe(false);
  });
});
