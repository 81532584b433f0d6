// `sandbox open` on real podman, under a real pseudo-terminal (script(1)): a shell in the retained worktree of a
// finished run that sees the agent's files, with no secret in its env or mounts and the run containers'
// isolation flags; every refusal; the reap and the boot sweep never removing a workspace under an open sandbox.
import { spawn, spawnSync, type ChildProcess } from "node:child_process";
import { randomUUID } from "node:crypto";
import { existsSync, mkdirSync, writeFileSync } from "node:fs";
import { join, resolve } from "node:path";
import { Queue } from "bullmq";
import { afterEach, beforeEach, describe, expect, it } from "vitest";
import { reapDueAt, reapJobId, SANDBOX_RETENTION_QUEUE } from "../../../queues/sandbox-retention.js";
import { SandcastleRunResult } from "../../../src/sandcastle/contract.js";
import { SECRET_ENV_PATH } from "../../../src/sandcastle/containers/container-args.js";
import { makeRunDirectory, writeMeta } from "../../../src/sandcastle/retention/retained-runs.js";
import { OPEN_SANDBOX_RETRY_MS } from "../../../src/sandcastle/retention/retention-sweep.js";
import { CLI, CliProcess, lastJsonLine, runCli, stopAllCli, waitFor } from "../../helpers/cli.js";
import { engineEnv, giveToAgentUser, inspect, podman, skipContainers, TEST_IMAGE } from "../../helpers/containers.js";
import { makeGitRepo, RunScope, SECRET_VALUE } from "../../helpers/run-scope.js";
import { FakeModel } from "../../helpers/fake-model.js";

const TEMPLATE = resolve(import.meta.dirname, "../../fixtures/sandcastle/leave-uncommitted");
const CONTAINER_TEMPLATE = resolve(import.meta.dirname, "../../fixtures/sandcastle/container-commit");
const H = 3_600_000;

let s: RunScope;
let repo: string;
let retention: Queue;
const shells = new Set<ChildProcess>();
const models: FakeModel[] = [];
const runIds: string[] = [];

beforeEach(() => {
  s = new RunScope();
  repo = join(s.dir.path, "repo");
  // root's repository (dry runs on the host): the sandbox's user is then uid 1000, never root.
  makeGitRepo(repo);
  retention = new Queue(SANDBOX_RETENTION_QUEUE, { connection: s.redis, prefix: s.prefix });
});
afterEach(async () => {
  for (const m of models.splice(0)) m.stop();
  for (const p of shells) p.kill("SIGKILL");
  shells.clear();
  // Sandboxes of this test's runs only (a sandbox is named after its run).
  for (const runId of runIds.splice(0)) podman(["rm", "--force", "--time=0", `pi-sandbox-${runId}`], { allowFail: true });
  await stopAllCli();
  await retention.close();
  await s.close();
});

const env = (extra: Record<string, string> = {}) =>
  s.env({
    SANDCASTLE_BIN: "",
    SANDCASTLE_IMAGE: TEST_IMAGE,
    SANDCASTLE_CONTAINER_MEMORY: "256m",
    SANDCASTLE_CONTAINER_CPUS: "1",
    SANDCASTLE_CONTAINER_PIDS: "128",
    TERM: "xterm-256color",
    ...engineEnv(),
    ...extra,
  });

async function startWorker(extra: Record<string, string> = {}): Promise<CliProcess> {
  const w = new CliProcess(["worker"], env({ LOG_LEVEL: "info", ...extra }));
  await w.waitForOutput(/workers running/, 60_000);
  return w;
}

async function run(branch: string, extra: Record<string, string> = {}, patch: Record<string, unknown> = {}): Promise<SandcastleRunResult> {
  const request = s.request({ prompt_template_dir: TEMPLATE, repo_workdir: repo, branch, ...patch });
  const res = await runCli(["enqueue", "sandcastle-run", "--request", "-", "--wait"], env(extra), { input: JSON.stringify(request), timeoutMs: 240_000 });
  expect(res.code, res.stderr).toBe(0);
  const result = SandcastleRunResult.parse(lastJsonLine(res.stdout));
  runIds.push(result.run_id);
  expect(result.status, result.message ?? "").toBe("ok");
  return result;
}

/** `sandcastle-queue sandbox open …` with a real terminal: script(1) gives it a pseudo-terminal; we type into it. */
class PtyShell {
  readonly proc: ChildProcess;
  out = "";
  readonly exited: Promise<number | null>;

  constructor(args: string[], extra: Record<string, string> = {}) {
    const command = [process.execPath, CLI, ...args].map((a) => `'${a}'`).join(" ");
    this.proc = spawn("script", ["-qfec", command, "/dev/null"], { env: env(extra), stdio: ["pipe", "pipe", "pipe"] });
    shells.add(this.proc);
    this.proc.stdout!.on("data", (d: Buffer) => (this.out += d.toString()));
    this.proc.stderr!.on("data", (d: Buffer) => (this.out += d.toString()));
    this.exited = new Promise((r) => this.proc.once("exit", (code) => r(code)));
  }

  type(line: string): void {
    this.proc.stdin!.write(`${line}\n`);
  }

  async waitFor(pattern: RegExp, timeoutMs = 60_000): Promise<RegExpMatchArray> {
    await waitFor(() => pattern.test(this.out), timeoutMs, () => `${pattern} in the terminal:\n${this.out}`);
    return this.out.match(pattern)!;
  }

  async exit(): Promise<number | null> {
    const code = await this.exited;
    shells.delete(this.proc);
    return code;
  }
}

/** A retained run laid down as a worker keeps one (a dry run's: noSandbox, the test image), without running it. */
async function retainByHand(): Promise<string> {
  const runId = `run-${randomUUID()}`;
  // Marked as this deployment's, as a worker marks the directories of its runs (ADR 0044).
  const dir = await makeRunDirectory(s.runsDir, runId, s.deployment);
  mkdirSync(join(dir, "workspace"), { recursive: true });
  mkdirSync(join(dir, "job"), { recursive: true });
  giveToAgentUser(join(dir, "workspace"));
  await writeMeta(s.runsDir, {
    run_id: runId,
    session_id: "sess-hand",
    branch: "agent/hand",
    status: "ok",
    provider: "noSandbox",
    image: TEST_IMAGE,
    worktree_path: "/home/agent/workspace",
    user: { uid: 1000, gid: 1000 },
    ended_at: new Date().toISOString(),
    pinned_until: null,
  });
  runIds.push(runId);
  return runId;
}

const running = (name: string) => podman(["ps", "--filter", `name=^${name}$`, "--format={{.Names}}"], { allowFail: true }).trim() === name;

describe.skipIf(skipContainers)("sandbox open on podman", () => {
  it("reaches a shell in the retained worktree that sees the agent's files, with the isolation flags, no secret in env or mounts, the egress policy with --allow, 127.0.0.1 publishing; a second open is refused naming podman attach", async () => {
    const model = await FakeModel.onHost({ key: null });
    models.push(model);
    const modelPort = new URL(model.url).port;
    await startWorker();
    const result = await run("agent/open");
    const name = `pi-sandbox-${result.run_id}`;
    const shell = new PtyShell(["sandbox", "open", result.run_id, "--publish", "18089:3000", "--allow", `fake-model.test:${modelPort}`], {
      SANDCASTLE_EGRESS_HOSTS: "fake-model.test=127.0.0.1",
    });
    await waitFor(
      () => running(name),
      90_000,
      () => `${name} running; terminal:\n${shell.out}`,
    );
    // Typed input is echoed by the terminal: every marker is computed by the shell, so only its output matches.
    shell.type('echo "@@pwd=$(pwd)@@"; echo "@@wip=$(cat wip.txt)@@"; echo "@@done=$(cat done.txt)@@"; echo "@@job=$(ls /job /job/prompt | tr "\\n" " ")@@"');
    shell.type(
      'echo "@@env=$(env | cut -d= -f1 | sort | tr "\\n" ,)@@"; echo "@@uid=$(id -u)@@"; echo "@@branch=$(git rev-parse --abbrev-ref HEAD)@@"; echo "@@log=$(grep -c "left wip.txt" /job/session.log)@@"; echo "@@ro=$(touch /job/x 2>&1 | grep -c Read-only)@@"; echo "@@caps=$(grep -E "^(CapEff|NoNewPrivs):" /proc/self/status | sed "s/[[:space:]]//g" | tr "\\n" " ")@@"; echo "@@END$((40+2))@@"',
    );
    await shell.waitFor(/@@END42@@/);
    expect(shell.out).toContain("@@pwd=/home/agent/workspace@@");
    expect(shell.out).toContain("@@wip=work in progress@@");
    expect(shell.out).toContain("@@done=done@@");
    expect(shell.out).toMatch(/@@job=\/job:\s+prompt request\.json result\.json session\.log\s+\/job\/prompt:\s+prompt\.md\s*@@/);
    expect(shell.out).toContain("@@uid=1000@@");
    expect(shell.out).toContain("@@branch=agent/open@@");
    expect(shell.out).toContain("@@log=1@@");
    expect(shell.out).toContain("@@ro=1@@");
    expect(shell.out).toContain("@@caps=CapEff:0000000000000000 NoNewPrivs:1 @@");
    const envNames = [...shell.out.matchAll(/@@env=([^@$]*)@@/g)].at(-1)![1]!.split(",").filter(Boolean);
    // Ours are TERM, TMOUT and the egress proxy's address; the rest is what podman itself gives every container.
    expect(envNames.filter((n) => !["HOME", "HOSTNAME", "PATH", "PWD", "SHLVL", "OLDPWD", "_", "container"].includes(n)).sort(), envNames.join(",")).toEqual(
      ["HTTPS_PROXY", "HTTP_PROXY", "NODE_USE_ENV_PROXY", "NO_PROXY", "TERM", "TMOUT", "http_proxy", "https_proxy", "no_proxy"].sort(),
    );
    // The egress policy: the runs' allowlist and this session's --allow; nothing else, directly or through the proxy.
    shell.type(
      `node -e 'const f=(u)=>fetch(u).then((r)=>r.status,()=>"refused");(async()=>{console.log("@@allowed="+(await f("http://fake-model.test:${modelPort}/x"))+"@@");console.log("@@denied="+(await f("https://evil.example/"))+"@@");require("net").connect(80,"1.1.1.1").on("error",(e)=>console.log("@@direct="+e.code+"@@"))})()'`,
    );
    await shell.waitFor(/@@direct=\w+@@/);
    expect(shell.out).toContain("@@allowed=404@@");
    expect(shell.out).toContain("@@denied=refused@@");
    expect(shell.out).toContain("@@direct=ENETUNREACH@@");
    // --publish: a server of the sandbox's, reached from the host's 127.0.0.1.
    shell.type(`node -e 'require("http").createServer((q,r)=>r.end("hello from the sandbox")).listen(3000,"127.0.0.1",()=>console.log("@@listening@@"))' &`);
    await shell.waitFor(/@@listening@@/);
    expect(await fetch("http://127.0.0.1:18089/").then((r) => r.text())).toBe("hello from the sandbox");
    expect(shell.out).not.toContain(SECRET_VALUE);

    const c = inspect(name);
    const host = c.HostConfig as Record<string, unknown>;
    expect(host.CapDrop).toEqual(expect.arrayContaining(["CAP_CHOWN", "CAP_DAC_OVERRIDE", "CAP_SETUID", "CAP_NET_RAW"]));
    expect(host.SecurityOpt).toEqual(expect.arrayContaining(["no-new-privileges"]));
    expect(host.PidsLimit).toBe(128);
    expect(host.Memory).toBe(256 * 2 ** 20);
    expect(host.NanoCpus).toBe(1e9);
    expect(host.AutoRemove).toBe(true);
    expect(c.Config.User).toBe("1000:1000");
    expect((c.Config.Env as string[]).filter((e) => /^(TERM|TMOUT)=/.test(e)).sort()).toEqual(["TERM=xterm-256color", "TMOUT=1800"]);
    expect(JSON.stringify(c)).not.toContain(SECRET_VALUE);
    const binds = c.Mounts.filter((m) => m.Type === "bind").map((m) => ({ dst: m.Destination, rw: m.RW }));
    expect(binds.sort((a, b) => String(a.dst).localeCompare(String(b.dst)))).toEqual([
      { dst: "/home/agent/workspace", rw: true },
      { dst: "/job", rw: false },
      { dst: "/run/sandcastle-queue/egress.sock", rw: true },
      { dst: "/run/sandcastle-queue/main", rw: false },
    ]);
    expect(c.Mounts.find((m) => m.Destination === "/home/agent/workspace")?.Source).toBe(join(s.runsDir, result.run_id, "workspace"));
    expect(c.Mounts.some((m) => m.Destination === SECRET_ENV_PATH)).toBe(false);
    expect(host.NetworkMode).toBe("none");

    const list = JSON.parse((await runCli(["sandbox", "list", "--json"], env())).stdout) as { runs: Array<{ run_id: string; open: boolean; state: string }> };
    expect(list.runs).toEqual([expect.objectContaining({ run_id: result.run_id, open: true, state: "OPEN" })]);
    expect((await runCli(["sandbox", "list"], env())).stdout).toMatch(/ OPEN\n$/);

    const second = new PtyShell(["sandbox", "open", result.run_id]);
    expect(await second.exit()).toBe(1);
    expect(second.out.trim()).toBe(`sandcastle-queue: a sandbox for ${result.run_id} is already open: podman attach ${name} (or exit that shell first)`);

    shell.type("exit");
    expect(await shell.exit()).toBe(0);
    await waitFor(
      () => podman(["ps", "--all", "--filter", `name=^${name}$`, "--format={{.Names}}"]).trim() === "",
      30_000,
      () => `${name} removed (--rm)`,
    );
    expect(existsSync(join(s.runsDir, result.run_id, "workspace", "wip.txt"))).toBe(true);
  }, 300_000);

  it("a podman run is retained with its image and the repository owner as the sandbox's user, and opens on what the agent committed in its container", async () => {
    giveToAgentUser(repo);
    await startWorker();
    const result = await run("agent/in-podman", {}, { sandbox: "podman", dry_run: false, prompt_template_dir: CONTAINER_TEMPLATE });
    const list = JSON.parse((await runCli(["sandbox", "list", "--json"], env())).stdout) as { runs: Array<Record<string, unknown>> };
    expect(list.runs).toEqual([expect.objectContaining({ run_id: result.run_id, branch: "agent/in-podman", status: "ok" })]);
    const shell = new PtyShell(["sandbox", "open", result.run_id]);
    await waitFor(
      () => running(`pi-sandbox-${result.run_id}`),
      90_000,
      () => `sandbox running; terminal:\n${shell.out}`,
    );
    expect(inspect(`pi-sandbox-${result.run_id}`).Config.User).toBe("1000:1000");
    expect(inspect(`pi-sandbox-${result.run_id}`).ImageName).toBe(TEST_IMAGE);
    shell.type('echo "@@file=$(head -n 1 in-container.txt)@@"; echo "@@log=$(git log -1 --format=%s)@@"; echo "@@END$((40+2))@@"; exit');
    expect(await shell.exit()).toBe(0);
    expect(shell.out).toContain("@@file=uid=1000 gid=1000@@");
    expect(shell.out).toContain("@@log=agent: commit made in the container@@");
    expect(shell.out).not.toContain(SECRET_VALUE);
  }, 400_000);

  it("refuses, each in one line with exit 1: an unknown run, an expired run, --publish with a bind address", async () => {
    await startWorker();
    const result = await run("agent/refuse");
    const refusals: Array<[string[], Record<string, string>, string]> = [
      [
        ["sandbox", "open", "run-00000000-0000-4000-8000-000000000000"],
        {},
        "sandcastle-queue: run-00000000-0000-4000-8000-000000000000 is not retained (unknown run, or its workspace was already reaped): sandcastle-queue sandbox list shows what is",
      ],
      [["sandbox", "open", result.run_id], { SANDBOX_RETENTION_HOURS: "0.0001" }, `sandcastle-queue: ${result.run_id} expired at `],
      [
        ["sandbox", "open", result.run_id, "--publish", "0.0.0.0:8080:3000"],
        {},
        'sandcastle-queue: invalid --publish: "0.0.0.0:8080:3000" names a bind address: a sandbox publishes on 127.0.0.1 only; give PORT or HOST_PORT:PORT',
      ],
    ];
    for (const [args, extra, message] of refusals) {
      const shell = new PtyShell(args, extra);
      expect(await shell.exit(), shell.out).toBe(1);
      expect(shell.out.trim().split("\n")).toHaveLength(1);
      expect(shell.out.trim().startsWith(message), shell.out).toBe(true);
    }
    expect(podman(["ps", "--all", `--filter=name=^pi-sandbox-${result.run_id}$`, "--format={{.Names}}"]).trim()).toBe("");
  }, 180_000);

  it("on a podman that refuses its defaults here, says what to set after podman's own error: CONTAINERS_CONF unset, then set to a file that does not fix it", async ({
    skip,
  }) => {
    // Only where this machine's podman needs a containers.conf of its own (this CI's machine kind does).
    const bare = spawnSync("podman", ["run", "--rm", "--network=none", TEST_IMAGE, "true"], {
      env: { PATH: process.env.PATH, HOME: process.env.HOME },
      encoding: "utf8",
      timeout: 120_000,
    });
    if (bare.status === 0) skip("this machine's podman runs containers without a containers.conf of its own");
    const runId = await retainByHand();
    const settings = 'runtime = "runc" and cgroup_manager = "cgroupfs" under [engine], default_ulimits = [] under [containers]';
    const unset = new PtyShell(["sandbox", "open", runId], { CONTAINERS_CONF: "" });
    expect(await unset.exit(), unset.out).toBe(bare.status);
    const lines = unset.out.replace(/\r\n/g, "\n").trim().split("\n");
    expect(lines.at(-2), unset.out).toMatch(/^Error: .*rlimit/);
    expect(lines.at(-1)).toBe(
      `sandcastle-queue: podman could not start the sandbox's container with its default settings (its error is above): this machine needs a containers.conf of its own — set CONTAINERS_CONF to one (${settings}; README "Containers"), as the worker has it`,
    );

    const empty = join(s.dir.path, "empty-containers.conf");
    writeFileSync(empty, "# sets nothing\n");
    const useless = new PtyShell(["sandbox", "open", runId], { CONTAINERS_CONF: empty });
    expect(await useless.exit(), useless.out).toBe(bare.status);
    expect(useless.out.replace(/\r\n/g, "\n").trim().split("\n").at(-1)).toBe(
      `sandcastle-queue: podman could not start the sandbox's container with CONTAINERS_CONF=${empty} (its error is above): check that file (${settings}; README "Containers")`,
    );
    // The shell's own exit code (126, 127) is never taken for podman's: with the right settings nothing is added.
    const shell = new PtyShell(["sandbox", "open", runId]);
    await waitFor(
      () => running(`pi-sandbox-${runId}`),
      90_000,
      () => `sandbox running; terminal:\n${shell.out}`,
    );
    shell.type("no-such-command-here; exit");
    expect(await shell.exit()).toBe(127);
    expect(shell.out).not.toContain("sandcastle-queue:");
  }, 300_000);

  it("--pin pins before the shell opens; the reap and the boot sweep skip an open sandbox past its time, and the next sweep removes it once closed", async () => {
    const window = { SANDBOX_RETENTION_HOURS: "0.005" }; // 18 s
    await startWorker(window);
    const result = await run("agent/sweep", window);
    const dir = join(s.runsDir, result.run_id);
    const name = `pi-sandbox-${result.run_id}`;
    const shell = new PtyShell(["sandbox", "open", result.run_id], window);
    await waitFor(
      () => running(name),
      90_000,
      () => `${name} running; terminal:\n${shell.out}`,
    );
    const ended = Date.parse(
      (JSON.parse((await runCli(["sandbox", "list", "--json"], env(window))).stdout) as { runs: Array<{ ended_at: string }> }).runs[0]!.ended_at,
    );

    // Its reap comes due while the sandbox is open: postponed, the directory stays.
    await waitFor(
      async () => ((await reapDueAt(s.redis, retention, result.run_id)) ?? 0) > ended + 0.005 * H + OPEN_SANDBOX_RETRY_MS / 2,
      90_000,
      () => "the reap postponed",
    );
    expect(existsSync(dir)).toBe(true);
    // A worker starting now: past its time, but open, so kept.
    const second = await startWorker(window);
    await second.waitForOutput(/their sandbox is open/, 30_000);
    expect(second.stdout + second.stderr).toContain(result.run_id);
    expect(existsSync(dir)).toBe(true);

    shell.type("exit");
    expect(await shell.exit()).toBe(0);
    await waitFor(() => !running(name), 30_000);
    await startWorker(window);
    expect(existsSync(dir)).toBe(false);

    // --pin: pinned before the container starts (the pin is in the list while the shell is open).
    await startWorker();
    const pinnedRun = await run("agent/pin-open");
    const pinned = new PtyShell(["sandbox", "open", pinnedRun.run_id, "--pin"]);
    await waitFor(
      () => running(`pi-sandbox-${pinnedRun.run_id}`),
      90_000,
      () => `sandbox running; terminal:\n${pinned.out}`,
    );
    const list = JSON.parse((await runCli(["sandbox", "list", "--json"], env())).stdout) as { runs: Array<{ run_id: string; pinned_until: string | null }> };
    expect(list.runs.find((r) => r.run_id === pinnedRun.run_id)!.pinned_until).not.toBeNull();
    expect(
      Math.abs((await reapDueAt(s.redis, retention, pinnedRun.run_id))! - Date.parse(list.runs.find((r) => r.run_id === pinnedRun.run_id)!.pinned_until!)),
    ).toBeLessThan(1000);
    expect((await retention.getJobs(["delayed"])).filter((j) => j.id === reapJobId(pinnedRun.run_id))).toHaveLength(1);
    pinned.type("exit");
    expect(await pinned.exit()).toBe(0);
  }, 400_000);
});
