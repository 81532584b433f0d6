// The argv of our docker/podman containers, as pure functions: the isolation flags every run container
// gets (shared with anything else that starts a run's image, so it cannot drift), labels, mounts, exec,
// listing and removal. Pure so both engines' argv is tested without an engine (docker has none in CI).
import { fileURLToPath } from "node:url";
import type { ContainerEngine, ContainerLimits, ContainerNetwork } from "../contract.js";

/** What scripts/build-sandbox-image.sh builds; SANDCASTLE_IMAGE's default. */
export const DEFAULT_SANDBOX_IMAGE = "localhost/sandcastle-queue-agent:latest";
export const LABEL_RUN_ID = "io.sandcastle-queue.run-id";
/** Which deployment (key prefix + Redis) started it: a worker only ever removes its own deployment's containers. */
export const LABEL_DEPLOYMENT = "io.sandcastle-queue.deployment";
/**
 * On a warm container (ADR 0053): the worker whose spare child started it (process-identity.ts). Its run-id label is the
 * spare's (`spare-<uuid>`), and stays so once a run takes it (labels cannot change); its name becomes the run's id.
 */
export const LABEL_SPARE_OF = "io.sandcastle-queue.spare-of";
/** Where the run's secret env file appears inside the container, read-only. */
export const SECRET_ENV_PATH = "/run/sandcastle-queue/env";
export const SANDBOX_HOME = "/home/agent";
/** Inside a run container (and a sandbox's): the main process's program (container-main/, read-only) and its exec channel's socket (ADR 0049). */
export const CONTAINER_MAIN_DIR = "/run/sandcastle-queue/main";
export const EXEC_SOCKET_PATH = "/run/sandcastle-queue/exec.sock";
/** Inside a run container (and a sandbox's): the egress proxy's socket, and the port the main process forwards to it (ADR 0035). */
export const EGRESS_SOCKET_PATH = "/run/sandcastle-queue/egress.sock";
export const EGRESS_PORT = 3128;

/** The built container-main/ on the host: plain Node, no import of the project, mounted read-only at CONTAINER_MAIN_DIR. */
export function containerMainDir(): string {
  return fileURLToPath(new URL("../container-main", import.meta.url));
}

/**
 * The argv of a container's main process (container-main/main.mts): it ends itself after `seconds`; with `exec` it
 * serves the exec channel (and ends with it), with `egress` it forwards EGRESS_PORT to the egress proxy.
 */
export function mainProcessArgv(o: { readonly seconds: number; readonly exec?: boolean; readonly egress?: boolean }): [string, ...string[]] {
  return [
    "node",
    `${CONTAINER_MAIN_DIR}/main.mjs`,
    `--seconds=${o.seconds}`,
    ...(o.exec === true ? [`--exec=${EXEC_SOCKET_PATH}`] : []),
    ...(o.egress === true ? [`--egress-port=${EGRESS_PORT}`, `--egress-socket=${EGRESS_SOCKET_PATH}`] : []),
  ];
}

export interface ContainerUser {
  readonly uid: number;
  readonly gid: number;
}

export interface IsolationOptions {
  readonly engine: ContainerEngine;
  readonly user: ContainerUser;
  readonly limits: ContainerLimits;
  /** "default": the engine's bridge; "none"; or the operator's SANDCASTLE_CONTAINER_NETWORK (a name, container:<name>). */
  readonly network: "default" | "none" | ContainerNetwork;
  /** podman run by a normal user: `--userns=keep-id` makes the container's uid the host's. */
  readonly rootless: boolean;
}

/** The engine's default network for a container unless the operator named one; never the host's namespace. */
function networkMode(o: IsolationOptions): string {
  if (o.network !== "default") return o.network;
  return o.engine === "podman" && o.rootless ? "slirp4netns" : "bridge";
}

export function isolationArgs(o: IsolationOptions): string[] {
  const args = [
    "--cap-drop=ALL",
    "--security-opt=no-new-privileges",
    `--pids-limit=${o.limits.pids}`,
    `--memory=${o.limits.memory}`,
    `--cpus=${o.limits.cpus}`,
    `--user=${o.user.uid}:${o.user.gid}`,
    "--init",
    `--network=${networkMode(o)}`,
    // The user has no passwd entry and the container one user: a sticky world-writable tmpfs is its home.
    `--tmpfs=${SANDBOX_HOME}:rw,exec,nosuid,nodev,mode=1777`,
  ];
  if (o.engine === "podman" && o.rootless) args.push("--userns=keep-id");
  return args;
}

export interface BindMount {
  readonly hostPath: string;
  readonly sandboxPath: string;
  readonly readonly?: boolean;
}

/** `--mount` refuses a missing source (where `-v` would create it); a comma would end the field. */
export function mountArg(m: BindMount): string {
  for (const p of [m.hostPath, m.sandboxPath]) {
    if (p.includes(",") || p.includes("\n")) throw new Error(`cannot mount ${JSON.stringify(p)}: a path holding ',' or a newline cannot be passed to --mount`);
  }
  return `--mount=type=bind,source=${m.hostPath},target=${m.sandboxPath}${m.readonly ? ",readonly" : ""}`;
}

export interface RunSpec extends IsolationOptions {
  readonly name: string;
  readonly image: string;
  readonly labels: Readonly<Record<string, string>>;
  readonly mounts: readonly BindMount[];
  readonly workdir: string;
  /** Argv of the container's main process (ours: mainProcessArgv, bounded by the run's end). */
  readonly command: readonly [string, ...string[]];
}

/**
 * `run --detach --rm`: when its main process ends, the container is gone, mounts and all, with nobody left to
 * remove it. No `-e`/`--env` ever (values on argv show in `ps` and in inspect's Config.Env).
 */
export function runArgs(spec: RunSpec): string[] {
  const [entrypoint, ...rest] = spec.command;
  return [
    "run",
    "--detach",
    "--rm",
    // Only an image that is here: a run never reaches a registry (the image check names a missing one).
    "--pull=never",
    `--name=${spec.name}`,
    ...Object.entries(spec.labels).map(([k, v]) => `--label=${k}=${v}`),
    ...isolationArgs(spec),
    ...spec.mounts.map(mountArg),
    `--workdir=${spec.workdir}`,
    `--entrypoint=${entrypoint}`,
    spec.image,
    ...rest,
  ];
}

/** One exec in a run container, `sh -c <script> sh <args…>`, as the exec channel runs it and `<cli> exec` does. */
export interface ContainerCommand {
  readonly script: string;
  /** $1… of the script: paths stay data, never part of it. */
  readonly args?: readonly string[];
  readonly cwd?: string;
  /** It is given input, written whole and then ended. */
  readonly stdin: boolean;
}

/** A command in the run's env: the shell loads the secret env file first (ADR 0008). */
export function shellCommand(command: string, opts: { cwd?: string; stdin?: boolean } = {}): ContainerCommand {
  return { script: withSecretEnv(command), ...(opts.cwd ? { cwd: opts.cwd } : {}), stdin: opts.stdin === true };
}

export function commandArgv(command: ContainerCommand): [string, ...string[]] {
  return ["sh", "-c", command.script, ...(command.args !== undefined && command.args.length > 0 ? ["sh", ...command.args] : [])];
}

/** `<cli> exec` of a command: how it runs when the container's exec channel is gone. A command given input takes all of it first (STDIN_FIRST). */
export function execArgs(name: string, command: ContainerCommand): string[] {
  const script = command.stdin ? `${STDIN_FIRST}\n${command.script}` : command.script;
  return [
    "exec",
    ...(command.stdin ? ["--interactive"] : []),
    ...(command.cwd ? [`--workdir=${command.cwd}`] : []),
    name,
    ...commandArgv({ ...command, script }),
  ];
}

/**
 * podman 4.3's `exec --interactive` can lose a process's output when it exits without reading its stdin (ADR 0049):
 * the shell takes all of stdin first, into a file the command then reads as its stdin. The exec channel has no such
 * bug (its stdin is a pipe of the server's) and does without it.
 */
export const STDIN_FIRST = 'scq_in=$(mktemp) && cat > "$scq_in" && exec 0< "$scq_in" && rm -f -- "$scq_in" || exit 125';

/** `set -a` is not needed: every line of the file is an `export`. A file that fails to load ends the shell. */
export function withSecretEnv(command: string): string {
  return `. ${SECRET_ENV_PATH} || exit 125\n${command}`;
}

/**
 * Files in and out go through `cat` in the container, not `<cli> cp`: docker's cp cannot reach tmpfs mounts (the
 * home, where agents keep their sessions), and the copy is made as the container's user. The path is an
 * argument, never part of the script.
 */
export function copyOutCommand(sandboxPath: string): ContainerCommand {
  return { script: 'exec cat -- "$1"', args: [sandboxPath], stdin: false };
}

export function copyInCommand(sandboxPath: string): ContainerCommand {
  return { script: 'mkdir -p -- "$(dirname -- "$1")" && exec cat > "$1"', args: [sandboxPath], stdin: true };
}

export function imageExistsArgs(engine: ContainerEngine, image: string): string[] {
  return engine === "podman" ? ["image", "exists", image] : ["image", "inspect", "--format={{.Id}}", image];
}

/** Ids of this deployment's containers; the same argv for both CLIs. */
export function listArgs(deployment: string): string[] {
  return ["ps", "--all", "--no-trunc", `--filter=label=${LABEL_DEPLOYMENT}=${deployment}`, "--format={{.ID}}"];
}

/** `<id>\t<run id>\t<spare of>\t<name>` per container: `inspect`'s template reads the same in docker and podman (ps's does not). */
export function runIdsArgs(ids: readonly string[]): string[] {
  return ["inspect", `--format={{.Id}}\t{{index .Config.Labels "${LABEL_RUN_ID}"}}\t{{index .Config.Labels "${LABEL_SPARE_OF}"}}\t{{.Name}}`, ...ids];
}

/** A container of the deployment: its id, its labels and its name. */
export interface ListedContainer {
  readonly id: string;
  readonly runId: string;
  /** A warm container's worker (LABEL_SPARE_OF). */
  readonly spareOf?: string;
  readonly name: string;
}

export function parseLines(stdout: string): string[] {
  return stdout
    .split("\n")
    .map((line) => line.trim())
    .filter((line) => line.length > 0);
}

export function parseRunIds(stdout: string): ListedContainer[] {
  return parseLines(stdout).map((line) => {
    const [id = "", runId = "", spareOf = "", name = ""] = line.split("\t");
    // An absent label reads `<no value>` in podman's template, empty in docker's; docker's names start with a slash.
    return { id, runId, ...(spareOf !== "" && spareOf !== "<no value>" ? { spareOf } : {}), name: name.replace(/^\//, "") };
  });
}

/** A container's new name (a warm container taken by its run is named after it); the same argv for both CLIs. */
export function renameArgs(name: string, newName: string): string[] {
  return ["rename", name, newName];
}

/** Stop at once (SIGKILL) and remove: nothing of a finished run is worth a grace period. */
export function removeArgs(engine: ContainerEngine, names: readonly string[]): string[] {
  return engine === "podman" ? ["rm", "--force", "--time=0", ...names] : ["rm", "--force", ...names];
}

export function runLabels(runId: string, deployment: string, spareOf?: string): Record<string, string> {
  return { [LABEL_RUN_ID]: runId, [LABEL_DEPLOYMENT]: deployment, ...(spareOf !== undefined ? { [LABEL_SPARE_OF]: spareOf } : {}) };
}
