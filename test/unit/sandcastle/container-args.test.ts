// The argv of our containers for both CLIs, without an engine. Docker's argv is also handed to the real
// docker CLI pointed at a socket that does not exist: the CLI parses and checks every flag and value
// before it connects, so "cannot connect" proves the argv is one docker accepts.
import { spawnSync } from "node:child_process";
import { mkdtempSync, readdirSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { describe, expect, it } from "vitest";
import {
  commandArgv,
  copyInCommand,
  copyOutCommand,
  execArgs,
  imageExistsArgs,
  isolationArgs,
  listArgs,
  mainProcessArgv,
  mountArg,
  parseRunIds,
  removeArgs,
  renameArgs,
  runArgs,
  runIdsArgs,
  runLabels,
  SECRET_ENV_PATH,
  shellCommand,
  STDIN_FIRST,
  withSecretEnv,
  type IsolationOptions,
  type RunSpec,
} from "../../../src/sandcastle/containers/container-args.js";
import { deploymentLabel } from "../../../src/sandcastle/deployment.js";

const LIMITS = { memory: "4g", cpus: 2, pids: 1024 };
const base: IsolationOptions = { engine: "podman", user: { uid: 1000, gid: 1001 }, limits: LIMITS, network: "default", rootless: false };

function spec(patch: Partial<RunSpec> = {}): RunSpec {
  return {
    ...base,
    name: "run-0b6f",
    image: "localhost/sandcastle-queue-agent:latest",
    labels: { "io.sandcastle-queue.run-id": "run-0b6f", "io.sandcastle-queue.deployment": "{scq}@redis://127.0.0.1:6379/" },
    mounts: [
      { hostPath: "/repo/.sandcastle/worktrees/a", sandboxPath: "/home/agent/workspace" },
      { hostPath: "/repo/.git", sandboxPath: "/repo/.git" },
      { hostPath: "/templates/t", sandboxPath: "/templates/t", readonly: true },
      { hostPath: "/dev/shm/scq-run-run-0b6f/run-0b6f.env", sandboxPath: SECRET_ENV_PATH, readonly: true },
    ],
    workdir: "/home/agent/workspace",
    command: mainProcessArgv({ seconds: 1805, exec: true }),
    ...patch,
  };
}

describe("isolation flags", () => {
  it("podman (rootful): every isolation flag, the bridge network, the repository owner's uid/gid", () => {
    expect(isolationArgs(base)).toEqual([
      "--cap-drop=ALL",
      "--security-opt=no-new-privileges",
      "--pids-limit=1024",
      "--memory=4g",
      "--cpus=2",
      "--user=1000:1001",
      "--init",
      "--network=bridge",
      "--tmpfs=/home/agent:rw,exec,nosuid,nodev,mode=1777",
    ]);
  });

  it("docker: the same flags (the binary is the only difference)", () => {
    expect(isolationArgs({ ...base, engine: "docker" })).toEqual(isolationArgs(base));
  });

  it("podman run by a normal user: keep-id maps the host uid into the container, slirp4netns networking", () => {
    const args = isolationArgs({ ...base, rootless: true });
    expect(args).toContain("--userns=keep-id");
    expect(args).toContain("--network=slirp4netns");
    // rootless has no meaning for docker here: the daemon owns the namespaces
    expect(isolationArgs({ ...base, engine: "docker", rootless: true })).not.toContain("--userns=keep-id");
  });

  it('network "none" when asked; never the host network, never privileged', () => {
    for (const engine of ["docker", "podman"] as const) {
      for (const rootless of [false, true]) {
        expect(isolationArgs({ ...base, engine, rootless, network: "none" })).toContain("--network=none");
        for (const network of ["default", "none"] as const) {
          const args = isolationArgs({ ...base, engine, rootless, network }).join(" ");
          expect(args).not.toMatch(/--network=host|--net=host|--privileged|--cap-add|--pid=host|--ipc=host|--userns=host/);
        }
      }
    }
  });

  it("limits are the settings given", () => {
    const args = isolationArgs({ ...base, limits: { memory: "512m", cpus: 1.5, pids: 64 } });
    expect(args).toEqual(expect.arrayContaining(["--memory=512m", "--cpus=1.5", "--pids-limit=64"]));
  });
});

describe("run, exec and housekeeping argv", () => {
  it("run: never a pull; name, labels, isolation, mounts (template and secret file read-only), workdir, entrypoint, image, command", () => {
    expect(runArgs(spec())).toEqual([
      "run",
      "--detach",
      "--rm",
      "--pull=never",
      "--name=run-0b6f",
      "--label=io.sandcastle-queue.run-id=run-0b6f",
      "--label=io.sandcastle-queue.deployment={scq}@redis://127.0.0.1:6379/",
      ...isolationArgs(base),
      "--mount=type=bind,source=/repo/.sandcastle/worktrees/a,target=/home/agent/workspace",
      "--mount=type=bind,source=/repo/.git,target=/repo/.git",
      "--mount=type=bind,source=/templates/t,target=/templates/t,readonly",
      `--mount=type=bind,source=/dev/shm/scq-run-run-0b6f/run-0b6f.env,target=${SECRET_ENV_PATH},readonly`,
      "--workdir=/home/agent/workspace",
      "--entrypoint=node",
      "localhost/sandcastle-queue-agent:latest",
      "/run/sandcastle-queue/main/main.mjs",
      "--seconds=1805",
      "--exec=/run/sandcastle-queue/exec.sock",
    ]);
  });

  it("the main process: its lifetime always, the exec channel and the egress forwarder when asked", () => {
    expect(mainProcessArgv({ seconds: 305 })).toEqual(["node", "/run/sandcastle-queue/main/main.mjs", "--seconds=305"]);
    expect(mainProcessArgv({ seconds: 305, exec: true, egress: true })).toEqual([
      "node",
      "/run/sandcastle-queue/main/main.mjs",
      "--seconds=305",
      "--exec=/run/sandcastle-queue/exec.sock",
      "--egress-port=3128",
      "--egress-socket=/run/sandcastle-queue/egress.sock",
    ]);
  });

  it("no argv ever carries an environment variable", () => {
    const all = [...runArgs(spec()), ...runArgs(spec({ engine: "docker" })), ...execArgs("run-0b6f", shellCommand("claude -p", { stdin: true, cwd: "/w" }))];
    expect(all.filter((a) => /^(-e|--env|--env-file)(=|$)/.test(a))).toEqual([]);
  });

  it("a path holding a comma cannot be mounted (it would end the --mount field)", () => {
    expect(() => mountArg({ hostPath: "/a,b", sandboxPath: "/x" })).toThrow(/','/);
  });

  it("a command runs after the secret env file is sourced, over the channel as through exec; stdin and cwd when asked", () => {
    expect(shellCommand("git status")).toEqual({ script: `. ${SECRET_ENV_PATH} || exit 125\ngit status`, stdin: false });
    expect(commandArgv(shellCommand("git status"))).toEqual(["sh", "-c", `. ${SECRET_ENV_PATH} || exit 125\ngit status`]);
    expect(execArgs("run-0b6f", shellCommand("git status"))).toEqual(["exec", "run-0b6f", "sh", "-c", `. ${SECRET_ENV_PATH} || exit 125\ngit status`]);
    expect(execArgs("run-0b6f", shellCommand("x", { stdin: true, cwd: "/home/agent/workspace" }))).toEqual([
      "exec",
      "--interactive",
      "--workdir=/home/agent/workspace",
      "run-0b6f",
      "sh",
      "-c",
      `${STDIN_FIRST}\n. ${SECRET_ENV_PATH} || exit 125\nx`,
    ]);
    // The channel has no podman stdin bug to work around: its argv is the command's own.
    expect(commandArgv(shellCommand("x", { stdin: true }))).toEqual(["sh", "-c", `. ${SECRET_ENV_PATH} || exit 125\nx`]);
  });

  it("with stdin, the shell takes all of it first: the command reads it whole from a file, or exits without reading it; its status stands; no file is left", () => {
    const tmp = mkdtempSync(join(tmpdir(), "scq-stdin-"));
    const run = (command: string, input: string) =>
      spawnSync("sh", ["-c", `${STDIN_FIRST}\n${command}`], { input, encoding: "utf8", env: { ...process.env, TMPDIR: tmp } });
    const prompt = `${"line of the prompt\n".repeat(20_000)}end`;
    const read = run("wc -c; test -f /dev/stdin && echo from-a-file", prompt);
    expect(read.stdout.split("\n").slice(0, 2)).toEqual([String(Buffer.byteLength(prompt)), "from-a-file"]);
    const unread = run("echo about to fail; echo something broke >&2; exit 3", prompt);
    expect([unread.stdout, unread.stderr, unread.status]).toEqual(["about to fail\n", "something broke\n", 3]);
    expect(readdirSync(tmp)).toEqual([]);
    rmSync(tmp, { recursive: true, force: true });
  });

  it("the secret env prefix runs in sh: the file's exports reach the command, a missing file stops it", () => {
    const missing = spawnSync("sh", ["-c", withSecretEnv("echo reached")], { encoding: "utf8" });
    expect(missing.stdout).not.toContain("reached");
    expect(missing.status).not.toBe(0);
  });

  it("files in and out: the path is an argument of a fixed script, never part of it", () => {
    const path = `/home/agent/it's; rm -rf /`;
    expect(commandArgv(copyOutCommand(path))).toEqual(["sh", "-c", 'exec cat -- "$1"', "sh", path]);
    expect(commandArgv(copyInCommand(path))).toEqual(["sh", "-c", 'mkdir -p -- "$(dirname -- "$1")" && exec cat > "$1"', "sh", path]);
    expect(execArgs("run-0b6f", copyOutCommand(path))).toEqual(["exec", "run-0b6f", "sh", "-c", 'exec cat -- "$1"', "sh", path]);
    expect(execArgs("run-0b6f", copyInCommand(path))).toEqual([
      "exec", "--interactive", "run-0b6f", "sh", "-c",
      `${STDIN_FIRST}\nmkdir -p -- "$(dirname -- "$1")" && exec cat > "$1"`,
      "sh",
      path,
    ]);
  });

  it("podman removes at once (--time=0); docker's rm --force kills at once already", () => {
    expect(removeArgs("podman", ["a", "b"])).toEqual(["rm", "--force", "--time=0", "a", "b"]);
    expect(removeArgs("docker", ["a"])).toEqual(["rm", "--force", "a"]);
    expect(imageExistsArgs("podman", "img")).toEqual(["image", "exists", "img"]);
    expect(imageExistsArgs("docker", "img")).toEqual(["image", "inspect", "--format={{.Id}}", "img"]);
  });

  it("the deployment label names the key prefix and Redis, never Redis's password", () => {
    expect(deploymentLabel("{scq}", { kind: "url", url: "redis://:hunter2-password@10.0.0.5:6380/2" })).toBe("{scq}@redis://:***@10.0.0.5:6380/2");
    expect(deploymentLabel("{scq}", { kind: "socket", path: "/srv/scq/.data/redis/redis.sock" })).toBe("{scq}@unix:///srv/scq/.data/redis/redis.sock");
  });

  it("listing filters by the deployment label; inspect output parses to run ids, a warm container's worker and names", () => {
    expect(listArgs("{scq}@x")).toEqual(["ps", "--all", "--no-trunc", "--filter=label=io.sandcastle-queue.deployment={scq}@x", "--format={{.ID}}"]);
    expect(runIdsArgs(["a", "b"])).toEqual([
      "inspect",
      '--format={{.Id}}\t{{index .Config.Labels "io.sandcastle-queue.run-id"}}\t{{index .Config.Labels "io.sandcastle-queue.spare-of"}}\t{{.Name}}',
      "a",
      "b",
    ]);
    // podman prints an absent label as `<no value>` and names bare; docker prints it empty and names with a slash.
    expect(parseRunIds("abc\trun-1\t<no value>\trun-1\n\ndef\tspare-9\th 1 2 3\t/run-2\nghi\trun-3\t\t/run-3\n")).toEqual([
      { id: "abc", runId: "run-1", name: "run-1" },
      { id: "def", runId: "spare-9", spareOf: "h 1 2 3", name: "run-2" },
      { id: "ghi", runId: "run-3", name: "run-3" },
    ]);
  });

  it("a warm container is labelled with the worker it waits for, and renamed after the run that takes it", () => {
    expect(runLabels("spare-9", "{scq}@x", "host boot 42 7")).toEqual({
      "io.sandcastle-queue.run-id": "spare-9",
      "io.sandcastle-queue.deployment": "{scq}@x",
      "io.sandcastle-queue.spare-of": "host boot 42 7",
    });
    expect(runLabels("run-1", "{scq}@x")).toEqual({ "io.sandcastle-queue.run-id": "run-1", "io.sandcastle-queue.deployment": "{scq}@x" });
    expect(renameArgs("spare-9", "run-1")).toEqual(["rename", "spare-9", "run-1"]);
  });
});

const dockerCli = spawnSync("sh", ["-c", "command -v docker"], { encoding: "utf8" }).stdout.trim();
const requireDocker = process.env.SCQ_TEST_CONTAINERS === "require";

describe.skipIf(dockerCli === "" && !requireDocker)("docker's own CLI accepts our argv (no engine: a socket that does not exist)", () => {
  const docker = (args: string[]) => spawnSync(dockerCli || "docker", args, { encoding: "utf8", env: { PATH: process.env.PATH, HOME: process.env.HOME, DOCKER_HOST: "unix:///nonexistent/scq-test-docker.sock" } });
  const accepted = (args: string[]) => {
    const out = docker(args);
    return { ok: /Cannot connect to the Docker daemon/.test(out.stderr), stderr: out.stderr.trim().split("\n")[0] };
  };

  it("run, exec, copies, rm, ps, inspect, image inspect: parsed, then the connection fails", () => {
    for (const network of ["default", "none"] as const) {
      expect(accepted(runArgs(spec({ engine: "docker", network })))).toEqual({ ok: true, stderr: expect.any(String) });
    }
    for (const args of [
      execArgs("run-0b6f", shellCommand("claude -p", { stdin: true, cwd: "/home/agent/workspace" })),
      execArgs("run-0b6f", copyInCommand("/home/agent/.claude/s.jsonl")),
      execArgs("run-0b6f", copyOutCommand("/home/agent/.claude/s.jsonl")),
      removeArgs("docker", ["run-0b6f", "run-0b6f-2"]),
      listArgs("{scq}@redis://127.0.0.1:6379/"),
      renameArgs("spare-0b6f", "run-0b6f"),
      runIdsArgs(["run-0b6f"]),
      imageExistsArgs("docker", "localhost/sandcastle-queue-agent:latest"),
    ]) {
      expect(accepted(args), args.join(" ")).toEqual({ ok: true, stderr: expect.any(String) });
    }
  });

  it("the check can fail: a bad flag or value is refused before any connection", () => {
    expect(accepted([...runArgs(spec({ engine: "docker" })).slice(0, 2), "--bogus-flag", "img"]).ok).toBe(false);
    expect(accepted(runArgs(spec({ engine: "docker", limits: { ...LIMITS, memory: "lots" } }))).ok).toBe(false);
  });
});
