// Sandboxes: an operator's shell in a retained run's workspace (`sandbox open`). A fresh container of the
// run's image with every isolation flag a run container gets (container-args.ts, the same function), the
// workspace read-write at the path the agent saw, the run's files read-only at /job, and no credential of
// any kind: the env is at most TERM, TMOUT and the egress proxy's address. Like a run, it has no network of its
// own: the container's main process (container-main/main.mts) runs beside the shell, forwarding to the session's
// egress proxy (ADR 0035). Named `pi-sandbox-<run_id>`,
// outside the run containers' labels, so no worker sweep ever removes a shell someone is sitting in.
import { InvalidInputError } from "../../errors.js";
import { resolveContainerCli, runContainerCli, type ContainerCli } from "./container-cli.js";
import {
  CONTAINER_MAIN_DIR, EGRESS_PORT, EGRESS_SOCKET_PATH, isolationArgs, mainProcessArgv, mountArg, parseLines, type ContainerUser,
} from "./container-args.js";
import type { ContainerEngine, ContainerLimits } from "../contract.js";

export const SANDBOX_NAME_PREFIX = "pi-sandbox-";
/** Where the run's files (request, prompt, session log, result) appear in a sandbox, read-only. */
export const SANDBOX_JOB_PATH = "/job";

export function sandboxName(runId: string): string {
  return `${SANDBOX_NAME_PREFIX}${runId}`;
}

export interface Publish {
  readonly hostPort: number;
  readonly port: number;
}

const port = (text: string): number | undefined => {
  if (!/^[0-9]{1,5}$/.test(text)) return undefined;
  const n = Number(text);
  return n >= 1 && n <= 65535 ? n : undefined;
};

/** `PORT` or `HOST_PORT:PORT`; always bound to 127.0.0.1, so a bind address is refused, never honoured. */
export function parsePublish(text: string): Publish {
  const parts = text.split(":");
  const [a, b] = parts;
  if (parts.length === 1 && port(a!) !== undefined) return { hostPort: port(a!)!, port: port(a!)! };
  if (parts.length === 2 && port(a!) !== undefined && port(b!) !== undefined) return { hostPort: port(a!)!, port: port(b!)! };
  if (parts.length >= 2 && port(parts[parts.length - 1]!) !== undefined && !port(parts[0]!)) {
    throw new InvalidInputError(
      "--publish",
      `${JSON.stringify(text)} names a bind address: a sandbox publishes on 127.0.0.1 only; give PORT or HOST_PORT:PORT`,
    );
  }
  throw new InvalidInputError("--publish", `${JSON.stringify(text)} takes PORT or HOST_PORT:PORT (1-65535)`);
}

export interface SandboxSpec {
  readonly engine: ContainerEngine;
  readonly runId: string;
  readonly image: string;
  readonly user: ContainerUser;
  readonly limits: ContainerLimits;
  readonly rootless: boolean;
  /** Host paths of the retained workspace and job files. */
  readonly workspace: string;
  readonly jobDir: string;
  /** Where the workspace appears inside: the path the run's agent saw. */
  readonly worktreePath: string;
  /** The host's TERM; unset or empty: not passed. */
  readonly term: string | undefined;
  /** SANDBOX_IDLE_MINUTES; 0: no TMOUT. */
  readonly idleMinutes: number;
  /** The session's egress proxy socket (ADR 0035). */
  readonly egress: { readonly socket: string };
  /** The built container-main/ (containerMainDir()): its main process, forwarding to the egress proxy beside the shell. */
  readonly mainDir: string;
}

const PROXY_URL = `http://127.0.0.1:${EGRESS_PORT}`;
/** The env that sends an agent's or a shell's HTTP(S) through the forwarder: both spellings, and Node's switch. */
export const PROXY_ENV: Readonly<Record<string, string>> = {
  HTTP_PROXY: PROXY_URL,
  HTTPS_PROXY: PROXY_URL,
  http_proxy: PROXY_URL,
  https_proxy: PROXY_URL,
  NO_PROXY: "localhost,127.0.0.1,::1",
  no_proxy: "localhost,127.0.0.1,::1",
  NODE_USE_ENV_PROXY: "1",
};
/** A shell has no deadline: the main process beside it lives as long as a session may (the shell's exit ends both). */
const SESSION_SECONDS = 20 * 86_400;

/** The env a sandbox gets: TERM and TMOUT, each dropped when it has nothing to say, and the egress proxy's address. */
export function sandboxEnv(spec: Pick<SandboxSpec, "term" | "idleMinutes">): Record<string, string> {
  const env: Record<string, string> = { ...PROXY_ENV };
  if (spec.term !== undefined && spec.term !== "") env.TERM = spec.term;
  if (spec.idleMinutes > 0) env.TMOUT = String(spec.idleMinutes * 60);
  return env;
}

/** `run --rm -it`: the shell is the container; exiting it removes it. The main process (the forwarder) starts beside it first. */
export function sandboxRunArgs(spec: SandboxSpec): string[] {
  return [
    "run",
    "--rm",
    "--interactive",
    "--tty",
    `--name=${sandboxName(spec.runId)}`,
    ...isolationArgs({ engine: spec.engine, user: spec.user, limits: spec.limits, network: "none", rootless: spec.rootless }),
    mountArg({ hostPath: spec.workspace, sandboxPath: spec.worktreePath }),
    mountArg({ hostPath: spec.jobDir, sandboxPath: SANDBOX_JOB_PATH, readonly: true }),
    mountArg({ hostPath: spec.egress.socket, sandboxPath: EGRESS_SOCKET_PATH }),
    mountArg({ hostPath: spec.mainDir, sandboxPath: CONTAINER_MAIN_DIR, readonly: true }),
    `--workdir=${spec.worktreePath}`,
    ...Object.entries(sandboxEnv(spec)).map(([k, v]) => `--env=${k}=${v}`),
    "--entrypoint=sh",
    spec.image,
    "-c",
    `${mainProcessArgv({ seconds: SESSION_SECONDS, egress: true }).join(" ")} & exec bash`,
  ];
}

/** Container liveness: which sandboxes are open now, by run id. The one question sweeps and `list` ask. */
export interface SandboxLiveness {
  openSandboxes(): Promise<ReadonlyMap<string, ContainerEngine>>;
}

/** Asks each engine's CLI for running `pi-sandbox-*` containers; an engine that cannot answer has none open. */
export class EngineSandboxes implements SandboxLiveness {
  /** Both engines as the service finds them; with SANDCASTLE_CONTAINER_CLI they are one binary, asked once. */
  static forEngines(settings: Parameters<typeof resolveContainerCli>[1]): EngineSandboxes {
    const clis = new Map<string, ContainerCli>();
    for (const engine of ["podman", "docker"] as const) {
      const cli = resolveContainerCli(engine, settings);
      if (cli !== undefined && !clis.has(cli.path)) clis.set(cli.path, cli);
    }
    return new EngineSandboxes([...clis.values()]);
  }

  constructor(readonly clis: readonly ContainerCli[]) {}

  async openSandboxes(): Promise<ReadonlyMap<string, ContainerEngine>> {
    const open = new Map<string, ContainerEngine>();
    for (const cli of this.clis) {
      const out = await runContainerCli(cli, ["ps", `--filter=name=${SANDBOX_NAME_PREFIX}`, "--format={{.Names}}"], 30_000);
      if (out.code !== 0) continue;
      for (const name of parseLines(out.stdout)) if (name.startsWith(SANDBOX_NAME_PREFIX)) open.set(name.slice(SANDBOX_NAME_PREFIX.length), cli.engine);
    }
    return open;
  }
}
