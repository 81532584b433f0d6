// The container provider's handle contract on real podman, called the way Sandcastle calls it: exec with
// streamed lines, stdin and cwd; files in and out (the tmpfs home included, binary-safe); sudo refused;
// close removes the container and its secret file; disposeSync removes what is still open.
import { chmodSync, existsSync, mkdirSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterEach, describe, expect, it } from "vitest";
import type { BindMountCreateOptions, BindMountSandboxHandle } from "@ai-hero/sandcastle";
import { ContainerSandbox } from "../../../src/sandcastle/child/container-provider.js";
import { resolveContainerCli } from "../../../src/sandcastle/container-cli.js";
import { engineEnv, giveToAgentUser, runContainerIds, skipContainers, TEST_IMAGE } from "../../helpers/containers.js";

const dirs: string[] = [];
const sandboxes: ContainerSandbox[] = [];
afterEach(() => {
  for (const s of sandboxes.splice(0)) s.disposeSync();
  for (const d of dirs.splice(0)) rmSync(d, { recursive: true, force: true });
});

function setup(runId: string): { sandbox: ContainerSandbox; runDir: string; worktree: string } {
  const root = mkdtempSync(join(tmpdir(), "scq-provider-"));
  dirs.push(root);
  const runDir = join(root, "run");
  const worktree = join(root, "worktree");
  const template = join(root, "template");
  for (const d of [runDir, worktree, template]) mkdirSync(d);
  chmodSync(runDir, 0o700);
  giveToAgentUser(worktree);
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
  });
  sandboxes.push(sandbox);
  return { sandbox, runDir, worktree };
}

async function open(sandbox: ContainerSandbox, worktree: string, env: Record<string, string>): Promise<BindMountSandboxHandle> {
  const provider = sandbox.provider() as unknown as { create(o: BindMountCreateOptions): Promise<BindMountSandboxHandle> };
  return provider.create({ worktreePath: worktree, hostRepoPath: worktree, mounts: [{ hostPath: worktree, sandboxPath: "/home/agent/workspace" }], env });
}

describe.skipIf(skipContainers)("container provider handle (real podman)", { timeout: 180_000 }, () => {
  it("exec streams lines, takes stdin and cwd, sees the env only through the sourced file", async () => {
    const runId = `run-provider-${Math.random().toString(36).slice(2, 8)}`;
    const { sandbox, worktree } = setup(runId);
    const handle = await open(sandbox, worktree, { GREETING: "it's a $(quoted) value" });
    expect(handle.worktreePath).toBe("/home/agent/workspace");

    const lines: string[] = [];
    const streamed = await handle.exec('printf "%s\\n" "$GREETING"; pwd; cat; echo err >&2; exit 3', { onLine: (l) => lines.push(l), stdin: "from stdin\n", cwd: "/tmp" });
    expect(lines).toEqual(["it's a $(quoted) value", "/tmp", "from stdin"]);
    expect(streamed).toMatchObject({ exitCode: 3, stderr: "err\n" });
    expect(streamed.stdout).toBe("it's a $(quoted) value\n/tmp\nfrom stdin");

    const buffered = await handle.exec("id -u; echo hi > made-inside.txt");
    expect(buffered).toEqual({ stdout: `${process.getuid?.() === 0 ? 1000 : process.getuid!()}\n`, stderr: "", exitCode: 0 });
    expect(readFileSync(join(worktree, "made-inside.txt"), "utf8")).toBe("hi\n");

    expect(await handle.exec("true", { sudo: true })).toMatchObject({ exitCode: 1, stderr: expect.stringMatching(/sudo is not available/) });
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

  it("close removes the container and its secret file; disposeSync removes what is still open", async () => {
    const runId = `run-provider-${Math.random().toString(36).slice(2, 8)}`;
    const { sandbox, runDir, worktree } = setup(runId);
    const first = await open(sandbox, worktree, { TOKEN_X: "value-1" });
    await open(sandbox, worktree, { TOKEN_X: "value-2" });
    expect(runContainerIds(runId)).toHaveLength(2);
    expect(existsSync(join(runDir, `${runId}.env`)) && existsSync(join(runDir, `${runId}-2.env`))).toBe(true);
    await first.close();
    expect(runContainerIds(runId)).toHaveLength(1);
    expect(existsSync(join(runDir, `${runId}.env`))).toBe(false);
    sandbox.disposeSync();
    expect(runContainerIds(runId)).toEqual([]);
    expect(existsSync(join(runDir, `${runId}-2.env`))).toBe(false);
  });
});
