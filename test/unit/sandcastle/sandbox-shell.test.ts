// The argv of `sandbox open` and its pure pieces: the run containers' isolation flags (the same function), no
// network of its own but the egress proxy's forwarder (the container's main process), the env (TERM, TMOUT, the proxy's address), mounts,
// publishing on 127.0.0.1 only.
import { describe, expect, it } from "vitest";
import { isolationArgs } from "../../../src/sandcastle/containers/container-args.js";
import { InvalidInputError } from "../../../src/errors.js";
import { parsePublish, PROXY_ENV, sandboxEnv, sandboxName, sandboxRunArgs, type SandboxSpec } from "../../../src/sandcastle/containers/sandbox-shell.js";

const RUN = "run-0b7e6a52-3c1d-4f7e-9a43-1d2c3b4a5f60";
const spec = (patch: Partial<SandboxSpec> = {}): SandboxSpec => ({
  engine: "podman",
  runId: RUN,
  image: "localhost/sandcastle-queue-agent:latest",
  user: { uid: 1000, gid: 1000 },
  limits: { memory: "4g", cpus: 2, pids: 1024 },
  rootless: false,
  workspace: `/data/runs/${RUN}/workspace`,
  jobDir: `/data/runs/${RUN}/job`,
  worktreePath: "/home/agent/workspace",
  term: "xterm-256color",
  idleMinutes: 30,
  egress: { socket: "/tmp/scq-sandbox-egress-x/egress.sock" },
  mainDir: "/opt/scq/dist/src/sandcastle/container-main",
  ...patch,
});

describe("sandbox open argv", () => {
  it("is run --rm -it, named pi-sandbox-<run_id>, with every isolation flag of a run container", () => {
    const args = sandboxRunArgs(spec());
    expect(args.slice(0, 5)).toEqual(["run", "--rm", "--interactive", "--tty", `--name=pi-sandbox-${RUN}`]);
    const isolation = isolationArgs({
      engine: "podman",
      user: { uid: 1000, gid: 1000 },
      limits: { memory: "4g", cpus: 2, pids: 1024 },
      network: "none",
      rootless: false,
    });
    expect(args.join("\n")).toContain(isolation.join("\n"));
    expect(args).toContain("--cap-drop=ALL");
    expect(args).toContain("--security-opt=no-new-privileges");
    expect(args).toContain("--user=1000:1000");
    expect(sandboxName(RUN)).toBe(`pi-sandbox-${RUN}`);
  });

  it("mounts the workspace read-write at the worktree path and the run's files read-only at /job, and starts there", () => {
    const args = sandboxRunArgs(spec());
    expect(args).toContain(`--mount=type=bind,source=/data/runs/${RUN}/workspace,target=/home/agent/workspace`);
    expect(args).toContain(`--mount=type=bind,source=/data/runs/${RUN}/job,target=/job,readonly`);
    expect(args).toContain("--workdir=/home/agent/workspace");
    expect(args.filter((a) => a.startsWith("--mount="))).toHaveLength(4);
    expect(args.slice(-4)).toEqual(["--entrypoint=sh", "localhost/sandcastle-queue-agent:latest", "-c", expect.stringMatching(/^node \/run\/sandcastle-queue\/main\/main\.mjs --seconds=\d+ --egress-port=3128 --egress-socket=\/run\/sandcastle-queue\/egress\.sock & exec bash$/)]);
  });

  it("has no network of its own: the egress proxy's socket and the main process (its forwarder) are mounted, the proxy's address in its env", () => {
    const args = sandboxRunArgs(spec());
    expect(args).toContain("--network=none");
    expect(args).toContain("--mount=type=bind,source=/tmp/scq-sandbox-egress-x/egress.sock,target=/run/sandcastle-queue/egress.sock");
    expect(args).toContain("--mount=type=bind,source=/opt/scq/dist/src/sandcastle/container-main,target=/run/sandcastle-queue/main,readonly");
    expect(args).toContain("--env=HTTPS_PROXY=http://127.0.0.1:3128");
    expect(args.some((a) => a.startsWith("--publish"))).toBe(false);
  });

  it("passes TERM and TMOUT, each dropped when it has nothing to say, and the egress proxy's address; never a credential", () => {
    const proxy = Object.keys(PROXY_ENV);
    expect(sandboxEnv({ term: "xterm", idleMinutes: 30 })).toEqual({ ...PROXY_ENV, TERM: "xterm", TMOUT: "1800" });
    expect(Object.keys(sandboxEnv({ term: undefined, idleMinutes: 0 }))).toEqual(proxy);
    expect(Object.keys(sandboxEnv({ term: "", idleMinutes: 5 })).filter((k) => !proxy.includes(k))).toEqual(["TMOUT"]);
    const names = sandboxRunArgs(spec()).filter((a) => a.startsWith("--env")).map((a) => a.slice("--env=".length).split("=")[0]);
    expect(names.filter((n) => !proxy.includes(n!))).toEqual(["TERM", "TMOUT"]);
  });

  it("publishes on 127.0.0.1 only: PORT, HOST_PORT:PORT; a bind address is refused, not honoured", () => {
    expect(parsePublish("3000")).toEqual({ hostPort: 3000, port: 3000 });
    expect(parsePublish("8080:3000")).toEqual({ hostPort: 8080, port: 3000 });
    for (const bad of ["0.0.0.0:8080:3000", "127.0.0.1:8080:3000", "[::]:80:80", "localhost:3000"]) {
      expect(() => parsePublish(bad)).toThrow(/bind address.*127\.0\.0\.1 only/);
    }
    for (const bad of ["", "http", "0", "70000", "80:", "1:2:3"]) expect(() => parsePublish(bad)).toThrow(InvalidInputError);
  });
});
