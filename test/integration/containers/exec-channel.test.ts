// The exec channel (ADR 0049) on real podman: a container whose main process is the exec server, the child's end
// of it on the host. Each behaviour `podman exec` had holds over the channel — stdin given whole, cwd, the env,
// exit codes and 128+signal, a 20 MB binary stdout byte for byte, a byte cap, several execs at once, a kill that
// takes the exec's whole process group in the container — and the channel's own rules: one connection, the
// server's, and nothing after it; a channel gone (never connected, stopped answering, its server killed) leaves
// the remaining commands to `podman exec`, said once, never a hang; an image without node fails provider_unavailable.
import { execFileSync } from "node:child_process";
import { createHash } from "node:crypto";
import { chmodSync, existsSync, mkdirSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import { connect } from "node:net";
import { tmpdir } from "node:os";
import { join, resolve } from "node:path";
import { afterAll, afterEach, beforeAll, describe, expect, it } from "vitest";
import type { BindMountCreateOptions, BindMountSandboxHandle } from "@ai-hero/sandcastle";
import { execResult, streamExec } from "../../../src/sandcastle/child/container-exec.js";
import { ContainerSandbox } from "../../../src/sandcastle/child/container-provider.js";
import { hardenHostGit } from "../../../src/sandcastle/child/container-user.js";
import { ExecChannel } from "../../../src/sandcastle/child/exec-channel.js";
import { resolveContainerCli } from "../../../src/sandcastle/containers/container-cli.js";
import { CONTAINER_MAIN_DIR, EXEC_SOCKET_PATH, mainProcessArgv, runArgs, type ContainerCommand } from "../../../src/sandcastle/containers/container-args.js";
import { ContainerRuns } from "../../helpers/container-runs.js";
import { engineEnv, giveToAgentUser, podman, containersGone, skipContainers, TEST_IMAGE } from "../../helpers/containers.js";
import { gitOut, makeGitRepo } from "../../helpers/git-repo.js";
import { waitFor } from "../../helpers/cli.js";

const MAIN_DIR = resolve(import.meta.dirname, "../../../dist/src/sandcastle/container-main");
const TEMPLATE = resolve(import.meta.dirname, "../../fixtures/sandcastle/container-commit");
const USER = { uid: process.getuid?.() === 0 ? 1000 : process.getuid!(), gid: process.getuid?.() === 0 ? 1000 : process.getgid!() };
const NO_NODE_IMAGE = `localhost/scq-test-no-node:${process.pid}`;

const dirs: string[] = [];
const names: string[] = [];
const channels: ExecChannel[] = [];
const sandboxes: ContainerSandbox[] = [];
afterEach(() => {
  for (const s of sandboxes.splice(0)) s.disposeSync();
  for (const c of channels.splice(0)) c.close();
  for (const name of names.splice(0)) podman(["rm", "--force", "--time=0", name], { allowFail: true });
  for (const d of dirs.splice(0)) rmSync(d, { recursive: true, force: true });
});

function tempDir(prefix: string): string {
  const dir = mkdtempSync(join(tmpdir(), prefix));
  chmodSync(dir, 0o700);
  dirs.push(dir);
  return dir;
}

/** A container whose main process is the exec server, and the host's end of its channel, connected. */
async function serve(): Promise<{ name: string; channel: ExecChannel; notes: string[] }> {
  const notes: string[] = [];
  const channel = await ExecChannel.listen(join(tempDir("scq-exec-"), "exec.sock"), { owner: USER, answerMs: 5000, onGone: (why) => notes.push(why) });
  channels.push(channel);
  const name = `scq-exec-test-${Math.random().toString(36).slice(2, 8)}`;
  names.push(name);
  const args = runArgs({
    engine: "podman",
    name,
    image: TEST_IMAGE,
    labels: { "io.sandcastle-queue.test": "exec-channel" },
    user: USER,
    limits: { memory: "512m", cpus: 1, pids: 128 },
    network: "none",
    rootless: process.getuid?.() !== 0,
    mounts: [
      { hostPath: MAIN_DIR, sandboxPath: CONTAINER_MAIN_DIR, readonly: true },
      { hostPath: channel.path, sandboxPath: EXEC_SOCKET_PATH },
    ],
    workdir: "/tmp",
    command: mainProcessArgv({ seconds: 600, exec: true }),
  });
  podman(args);
  expect(await channel.waitConnected(30_000)).toBe(true);
  return { name, channel, notes };
}

const command = (script: string, opts: { stdin?: boolean; cwd?: string } = {}): ContainerCommand => ({
  script,
  stdin: opts.stdin === true,
  ...(opts.cwd !== undefined ? { cwd: opts.cwd } : {}),
});

async function run(channel: ExecChannel, script: string, opts: { input?: string; cwd?: string; onLine?: (line: string) => void } = {}) {
  const proc = await channel.start(command(script, { stdin: opts.input !== undefined, ...(opts.cwd !== undefined ? { cwd: opts.cwd } : {}) }));
  if (proc === undefined) throw new Error("the channel took no exec");
  return execResult(proc, { ...(opts.input !== undefined ? { input: opts.input } : {}), ...(opts.onLine !== undefined ? { onLine: opts.onLine } : {}) });
}

/** The exec server's pid, found the way an agent would: its command line in the container's /proc. */
const SERVER_PID =
  `for p in /proc/[0-9]*; do if tr '\\0' ' ' < "$p/cmdline" 2>/dev/null | grep -q '^node ${CONTAINER_MAIN_DIR}/main.mjs'; then basename "$p"; fi; done`;

/** Processes in the container whose command line is `argv`, as its own /proc shows them (the image has no ps). */
const processesRunning = (argv: string) =>
  `for p in /proc/[0-9]*; do tr '\\0' ' ' < "$p/cmdline" 2>/dev/null; echo; done | grep -cxF -- ${JSON.stringify(`${argv} `)} || true`;

describe.skipIf(skipContainers)("the exec channel into a real podman container", { timeout: 180_000 }, () => {
  it("runs a command as podman exec would: stdin given whole, cwd, the same env, its exit code; a signal's death is 128+signal", async () => {
    const { name, channel, notes } = await serve();
    const lines: string[] = [];
    const prompt = `${"a line of the prompt\n".repeat(20_000)}end`;
    const first = await run(channel, 'wc -c; pwd; id -u; echo err >&2; exit 7', { input: prompt, cwd: "/home/agent", onLine: (l) => lines.push(l) });
    expect(first).toEqual({ stdout: `${Buffer.byteLength(prompt)}\n/home/agent\n${USER.uid}`, stderr: "err\n", exitCode: 7 });
    expect(lines).toEqual([String(Buffer.byteLength(prompt)), "/home/agent", String(USER.uid)]);
    // A command that exits without reading its input loses none of its output (the pipe is the server's).
    for (let i = 0; i < 10; i++) expect(await run(channel, "echo early; exit 3", { input: prompt })).toEqual({ stdout: "early\n", stderr: "", exitCode: 3 });
    expect((await run(channel, "kill -KILL $$")).exitCode).toBe(137);
    expect((await run(channel, "kill -TERM $$")).exitCode).toBe(143);
    expect(await run(channel, "pwd", { cwd: "/nowhere" })).toMatchObject({ exitCode: 127, stderr: expect.stringMatching(/chdir to cwd \("\/nowhere"\) failed: no such file or directory/) });
    // The env `podman exec` gives, exactly (the container's, less HOSTNAME); the workdir by default.
    const viaPodman = execFileSync("podman", ["exec", name, "sh", "-c", "env | sort; pwd"], { env: { ...process.env, ...engineEnv() }, encoding: "utf8" });
    expect((await run(channel, "env | sort; pwd")).stdout).toBe(viaPodman);
    // A process left in the background holding stdout does not hold up the exec's end (as with podman exec).
    const started = Date.now();
    expect(await run(channel, "sleep 30 & echo left behind")).toEqual({ stdout: "left behind\n", stderr: "", exitCode: 0 });
    expect(Date.now() - started).toBeLessThan(5000);
    expect(notes).toEqual([]);
  });

  it("streams 20 MB of binary stdout into a file byte for byte; past a byte cap the exec is killed and no file is left", async () => {
    const { channel } = await serve();
    const dir = tempDir("scq-exec-out-");
    const out = join(dir, "big.bin");
    const proc = await channel.start(command("head -c 20971520 /dev/urandom > /tmp/big.bin && sha256sum /tmp/big.bin >&2 && cat /tmp/big.bin"));
    const stderr = await streamExec(proc!, { to: out });
    expect(readFileSync(out).length).toBe(20 * 2 ** 20);
    expect(createHash("sha256").update(readFileSync(out)).digest("hex")).toBe(stderr.split(" ")[0]);
    const capped = join(dir, "capped.bin");
    await expect(streamExec((await channel.start(command("cat /tmp/big.bin")))!, { to: capped, maxBytes: 2 ** 20 })).rejects.toThrow(/its output passed 1048576 bytes/);
    expect(existsSync(capped)).toBe(false);
    // Input streamed in from a file arrives whole too.
    const back = join(dir, "back.bin");
    await streamExec((await channel.start(command("cat > /tmp/in.bin && sha256sum /tmp/in.bin >&2 && cat /tmp/in.bin", { stdin: true })))!, {
      from: out,
      to: back,
    });
    expect(readFileSync(back).equals(readFileSync(out))).toBe(true);
  });

  it("runs several execs at once, each with its own output and exit", async () => {
    const { channel } = await serve();
    const started = Date.now();
    const results = await Promise.all([...Array(8).keys()].map((n) => run(channel, `sleep 1; echo out-${n}; echo err-${n} >&2; exit ${n}`)));
    expect(results).toEqual([...Array(8).keys()].map((n) => ({ stdout: `out-${n}\n`, stderr: `err-${n}\n`, exitCode: n })));
    expect(Date.now() - started).toBeLessThan(6000);
  });

  it("a kill takes the exec's whole process group in the container, and only it", async () => {
    const { channel } = await serve();
    const bystander = run(channel, "sleep 4; echo bystander done");
    const long = await channel.start(command("sleep 1001 & sleep 1001 & sh -c 'sleep 1001' & wait"));
    await expect.poll(async () => (await run(channel, processesRunning("sleep 1001"))).stdout.trim(), { timeout: 10_000 }).toBe("3");
    await expect(streamExec(long!, { timeoutMs: 200 })).rejects.toThrow();
    await expect.poll(async () => (await run(channel, processesRunning("sleep 1001"))).stdout.trim(), { timeout: 10_000 }).toBe("0");
    expect(await bystander).toMatchObject({ stdout: "bystander done\n", exitCode: 0 });
  });

  it("takes one connection, the server's: the socket is gone from the host, and a second client — the agent — is refused", async () => {
    const { channel, notes } = await serve();
    expect(existsSync(channel.path)).toBe(false);
    const probe =
      `node -e 'require("net").connect(${JSON.stringify(EXEC_SOCKET_PATH)}).on("connect",()=>console.log("connected")).on("error",(e)=>console.log(e.code))'`;
    expect((await run(channel, probe)).stdout.trim()).toBe("ECONNREFUSED");
    expect(notes).toEqual([]);
  });

  it("a deadline from the host moves the container's end: a warm container ends at its run's end, not its own (ADR 0053)", async () => {
    const { name, channel } = await serve(); // it would end itself in 600 s
    const running = () => podman(["ps", "--filter", `name=^${name}$`, "--format={{.Names}}"], { allowFail: true }).trim() === name;
    expect(running()).toBe(true);
    expect(channel.setDeadline(3600)).toBe(true);
    await new Promise((r) => setTimeout(r, 1500));
    expect(running()).toBe(true);
    expect(await run(channel, "echo still")).toMatchObject({ stdout: "still\n", exitCode: 0 });
    expect(channel.setDeadline(2)).toBe(true); // a later deadline replaces the one before
    const set = Date.now();
    await waitFor(() => !running(), 20_000, () => `${name} to end at its new deadline`);
    expect(Date.now() - set).toBeGreaterThanOrEqual(1500);
    await waitFor(() => !channel.open, 10_000, () => "the channel gone with its container");
    expect(channel.setDeadline(5)).toBe(false); // nothing left to move
  });

  it("on the host, a second connection while the first is held is closed unserved", async () => {
    const notes: string[] = [];
    const channel = await ExecChannel.listen(join(tempDir("scq-exec-"), "exec.sock"), { owner: USER, answerMs: 5000, onGone: (why) => notes.push(why) });
    channels.push(channel);
    const first = connect(channel.path);
    const hello = new Promise<Buffer>((r) => first.once("data", r));
    expect(await channel.waitConnected(5000)).toBe(true);
    expect((await hello).subarray(4, 5)[0]).toBe(0); // the host's hello
    const second = connect(channel.path);
    const refused = await new Promise<string>((r) => {
      second.once("error", (e: NodeJS.ErrnoException) => r(e.code ?? "error"));
      second.once("connect", () => r("connected"));
    });
    expect(refused).toMatch(/ENOENT|ECONNREFUSED/);
    first.destroy();
    await expect.poll(() => notes).toEqual(["closed (its main process went away)"]);
  });
});

/** A host repository with the phase's branch, and a provider for it, as container-provider.test.ts has it. */
function sandbox(runId: string, patch: Partial<ConstructorParameters<typeof ContainerSandbox>[0]> = {}) {
  const root = tempDir("scq-exec-provider-");
  const runDir = join(root, "run");
  const worktree = join(root, "worktree");
  const template = join(root, "template");
  const repo = join(root, "repo");
  for (const d of [runDir, worktree, template]) mkdirSync(d);
  chmodSync(runDir, 0o700);
  makeGitRepo(repo);
  gitOut(repo, "branch", "agent/channel");
  giveToAgentUser(repo);
  hardenHostGit(repo, "podman");
  const notes: string[] = [];
  const cli = resolveContainerCli("podman", { containerCli: null, engineEnv: engineEnv(), path: process.env.PATH, home: process.env.HOME })!;
  const s = new ContainerSandbox({
    cli,
    runId,
    runDir,
    image: TEST_IMAGE,
    user: USER,
    limits: { memory: "256m", cpus: 1, pids: 64 },
    network: "none",
    deployment: "{exec-channel-test}@local",
    templateDir: template,
    repo,
    commonDir: join(repo, ".git"),
    runBranch: "agent/channel",
    workDir: join(root, "agent"),
    homeFiles: [{ path: ".config/agent/settings.json", content: "{}\n" }],
    endsBy: Date.now() + 600_000,
    mainDir: MAIN_DIR,
    note: (line) => notes.push(line),
    ...patch,
  });
  sandboxes.push(s);
  const open = async (phase = worktree): Promise<BindMountSandboxHandle> => {
    mkdirSync(phase, { recursive: true });
    const provider = s.provider({ branch: "agent/channel", worktreePath: phase }) as unknown as {
      create(o: BindMountCreateOptions): Promise<BindMountSandboxHandle>;
    };
    return provider.create({
      worktreePath: phase,
      hostRepoPath: phase,
      mounts: [{ hostPath: phase, sandboxPath: "/home/agent/workspace" }],
      env: { GREETING: "hello" },
    });
  };
  return { sandbox: s, notes, open, root };
}


const podmanExecsOf = (name: string, since: number) =>
  podman([
    "events",
    "--stream=false",
    `--since=${new Date(since - 1000).toISOString()}`,
    `--filter=container=${name}`,
    "--filter=event=exec",
    "--format={{.Status}}",
  ])
    .split("\n")
    .filter(Boolean).length;

describe.skipIf(skipContainers)("when the exec channel is gone, the container's commands go through podman exec", { timeout: 180_000 }, () => {
  it("a run container's commands go over its channel, two containers made at once each over its own: no podman exec at all", async () => {
    const runId = `run-chan-${Math.random().toString(36).slice(2, 8)}`;
    const since = Date.now();
    const { notes, open, root } = sandbox(runId);
    // As the parallel planner's implementers are: created concurrently.
    const handles = await Promise.all([open(join(root, "phase-a")), open(join(root, "phase-b"))]);
    for (const handle of handles) {
      expect(await handle.exec('echo "$GREETING" $(hostname)')).toMatchObject({ stdout: expect.stringMatching(/^hello \w+\n$/), exitCode: 0 });
      expect(await handle.exec("cat ~/.config/agent/settings.json")).toMatchObject({ stdout: "{}\n" });
    }
    const hosts = await Promise.all(handles.map(async (h) => (await h.exec("hostname")).stdout));
    expect(new Set(hosts).size).toBe(2);
    for (const handle of handles) await handle.close();
    expect(podmanExecsOf(runId, since) + podmanExecsOf(`${runId}-2`, since)).toBe(0);
    expect(notes).toEqual([]);
  });

  it("a server that stops answering (the agent stopped it): the next command waits a bounded time, then podman exec runs it and the rest; said once", async () => {
    const runId = `run-chan-${Math.random().toString(36).slice(2, 8)}`;
    const { notes, open } = sandbox(runId, { channelWaits: { answerMs: 2000 } });
    const handle = await open();
    const pid = (await handle.exec(SERVER_PID)).stdout.trim();
    expect(pid).toMatch(/^\d+$/);
    // As an agent would, from inside: stop the server once this exec has answered.
    expect((await handle.exec(`(sleep 0.5; kill -STOP ${pid}) >/dev/null 2>&1 &`)).exitCode).toBe(0);
    await new Promise((r) => setTimeout(r, 1000));
    const started = Date.now();
    expect(await handle.exec('echo "still works: $GREETING"')).toEqual({ stdout: "still works: hello\n", stderr: "", exitCode: 0 });
    expect(Date.now() - started).toBeLessThan(15_000);
    expect(await handle.exec("echo again", { stdin: "x" })).toMatchObject({ stdout: "again\n", exitCode: 0 });
    expect(notes).toEqual([`the exec channel into ${runId} did not answer for 2 s: its commands go through \`podman exec\` from now on`]);
    await handle.close();
    await containersGone(runId);
  });

  it("a server that never connects within the bounded wait: its commands go through podman exec from the first", async () => {
    const runId = `run-chan-${Math.random().toString(36).slice(2, 8)}`;
    // A main process that holds the container's lifetime and serves nothing.
    const mainDir = tempDir("scq-exec-mute-");
    writeFileSync(join(mainDir, "main.mjs"), "setTimeout(() => {}, 600_000);\n");
    chmodSync(mainDir, 0o755);
    const { notes, open } = sandbox(runId, { mainDir, channelWaits: { connectMs: 2000 } });
    const handle = await open();
    expect(notes).toEqual([
      `the exec channel into ${runId} got no connection from its exec server within 2 s: its commands go through \`podman exec\` from now on`,
    ]);
    expect(await handle.exec('echo "$GREETING"; cat ~/.config/agent/settings.json')).toEqual({ stdout: "hello\n{}\n", stderr: "", exitCode: 0 });
    await handle.close();
  });

  it("a time limit still holds when the server is stopped mid-exec: the kill is taken as done after a bound, and the channel as gone", async () => {
    const { channel, notes } = await serve();
    const pid = (await run(channel, SERVER_PID)).stdout.trim();
    const long = await channel.start(command("sleep 1002"));
    expect((await run(channel, `(sleep 0.3; kill -STOP ${pid}) >/dev/null 2>&1 &`)).exitCode).toBe(0);
    await new Promise((r) => setTimeout(r, 800));
    const started = Date.now();
    await expect(streamExec(long!, { timeoutMs: 500 })).rejects.toThrow(/killed, but the exec server did not confirm it within 5 s/);
    expect(Date.now() - started).toBeLessThan(10_000);
    expect(notes).toEqual(["did not confirm a kill for 5 s"]);
    expect(await channel.start(command("true"))).toBeUndefined();
  });

  it("a server the agent killed takes its container with it: the next command fails at once, saying so, and nothing hangs", async () => {
    const runId = `run-chan-${Math.random().toString(36).slice(2, 8)}`;
    const { notes, open } = sandbox(runId);
    const handle = await open();
    const pid = (await handle.exec(SERVER_PID)).stdout.trim();
    // The exec running when it is killed dies with the container: it ends (rejected), it does not hang.
    await expect(handle.exec(`(sleep 0.3; kill -KILL ${pid}) >/dev/null 2>&1 & sleep 30`)).rejects.toThrow(/exec channel into the container closed before the command ended/);
    expect(notes).toEqual([`the exec channel into ${runId} closed (its main process went away): its commands go through \`podman exec\` from now on`]);
    const next = await handle.exec("echo too late");
    expect(next.exitCode).not.toBe(0);
    expect(next.stderr).toMatch(/no such container|no container with name or id|not running|container state improper/i);
    await handle.close();
  });
});

describe.skipIf(skipContainers)("an image without node", { timeout: 300_000 }, () => {
  beforeAll(() => {
    const maker = `scq-test-no-node-${process.pid}`;
    podman(["run", `--name=${maker}`, "--user=0", "--network=none", "--entrypoint=rm", TEST_IMAGE, "-f", "/usr/local/bin/node", "/opt/node/bin/node"]);
    podman(["commit", "--quiet", maker, NO_NODE_IMAGE]);
    podman(["rm", "--force", maker]);
  });
  afterAll(() => {
    podman(["rmi", "--force", NO_NODE_IMAGE], { allowFail: true });
  });

  it("cannot start a run container: the provider says the image needs node", async () => {
    const runId = `run-chan-${Math.random().toString(36).slice(2, 8)}`;
    const { open } = sandbox(runId, { image: NO_NODE_IMAGE });
    const started = Date.now();
    await expect(open()).rejects.toThrow(
      `image ${NO_NODE_IMAGE} cannot run the container's main process (its container ended at once): it needs \`node\` (22 or later) on PATH`,
    );
    // Known as soon as its container has ended, not at the end of the wait for its exec server.
    expect(Date.now() - started).toBeLessThan(10_000);
    await containersGone(runId);
  });

  it("a run on it fails provider_unavailable, naming node", async () => {
    const c = new ContainerRuns();
    try {
      c.handRepoToAgentUser();
      await c.startWorker();
      const run = await c.enqueueWaiting(c.request(TEMPLATE, { image: NO_NODE_IMAGE, network: "none" }));
      const result = await run.result();
      expect(result).toMatchObject({ status: "failed", failure_reason: "provider_unavailable" });
      expect(result.message).toMatch(/cannot run the container's main process .*: it needs `node` \(22 or later\) on PATH — each run container's main process is plain Node/);
      await containersGone(run.runId);
    } finally {
      await c.close();
    }
  });
});
