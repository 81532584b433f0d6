// The argv of `sandbox open` and its pure pieces: the run containers' isolation flags (the same function),
// the env (TERM and TMOUT only), mounts, publishing on 127.0.0.1 only.
import { describe, expect, it } from "vitest";
import { isolationArgs } from "../../../src/sandcastle/container-args.js";
import { InvalidInputError } from "../../../src/errors.js";
import { parsePublish, sandboxEnv, sandboxName, sandboxRunArgs, type SandboxSpec } from "../../../src/sandcastle/sandbox-shell.js";

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
  publish: undefined,
  ...patch,
});

describe("sandbox open argv", () => {
  it("is run --rm -it, named pi-sandbox-<run_id>, with every isolation flag of a run container", () => {
    const args = sandboxRunArgs(spec());
    expect(args.slice(0, 5)).toEqual(["run", "--rm", "--interactive", "--tty", `--name=pi-sandbox-${RUN}`]);
    const isolation = isolationArgs({ engine: "podman", user: { uid: 1000, gid: 1000 }, limits: { memory: "4g", cpus: 2, pids: 1024 }, network: "default", rootless: false });
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
    expect(args.filter((a) => a.startsWith("--mount="))).toHaveLength(2);
    expect(args.at(-1)).toBe("localhost/sandcastle-queue-agent:latest");
  });

  it("passes TERM and TMOUT only, each dropped when it has nothing to say", () => {
    expect(sandboxEnv({ term: "xterm", idleMinutes: 30 })).toEqual({ TERM: "xterm", TMOUT: "1800" });
    expect(sandboxEnv({ term: undefined, idleMinutes: 0 })).toEqual({});
    expect(sandboxEnv({ term: "", idleMinutes: 5 })).toEqual({ TMOUT: "300" });
    const envArgs = sandboxRunArgs(spec({ term: undefined, idleMinutes: 0 })).filter((a) => a.startsWith("--env") || a === "-e");
    expect(envArgs).toEqual([]);
    expect(sandboxRunArgs(spec()).filter((a) => a.startsWith("--env"))).toEqual(["--env=TERM=xterm-256color", "--env=TMOUT=1800"]);
  });

  it("publishes on 127.0.0.1 only: PORT, HOST_PORT:PORT; a bind address is refused, not honoured", () => {
    expect(parsePublish("3000")).toEqual({ hostPort: 3000, port: 3000 });
    expect(parsePublish("8080:3000")).toEqual({ hostPort: 8080, port: 3000 });
    expect(sandboxRunArgs(spec({ publish: { hostPort: 8080, port: 3000 } }))).toContain("--publish=127.0.0.1:8080:3000");
    for (const bad of ["0.0.0.0:8080:3000", "127.0.0.1:8080:3000", "[::]:80:80", "localhost:3000"]) {
      expect(() => parsePublish(bad)).toThrow(/bind address.*127\.0\.0\.1 only/);
    }
    for (const bad of ["", "http", "0", "70000", "80:", "1:2:3"]) expect(() => parsePublish(bad)).toThrow(InvalidInputError);
  });
});
