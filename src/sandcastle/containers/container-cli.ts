// The docker/podman binary as the service runs it (worker and child alike): which binary, and with which
// environment — PATH, HOME and the engine's own variables (CONTAINERS_CONF, DOCKER_HOST, …), never a secret.
import { execFile } from "node:child_process";
import type { ContainerEngine } from "../contract.js";
import { findExecutable, isExecutableFile } from "../executables.js";

export interface ContainerCli {
  readonly engine: ContainerEngine;
  readonly path: string;
  readonly env: Readonly<Record<string, string>>;
}

export interface CliResult {
  readonly code: number;
  readonly stdout: string;
  readonly stderr: string;
}

/** The binary for `engine`: the override when set, else `docker` / `podman` on PATH; undefined when it is not there. */
export function resolveContainerCli(
  engine: ContainerEngine,
  settings: {
    readonly containerCli: string | null;
    readonly engineEnv: Readonly<Record<string, string>>;
    readonly path: string | undefined;
    readonly home: string | undefined;
  },
): ContainerCli | undefined {
  const path =
    settings.containerCli !== null ? (isExecutableFile(settings.containerCli) ? settings.containerCli : undefined) : findExecutable(engine, settings.path);
  if (path === undefined) return undefined;
  const env: Record<string, string> = { ...settings.engineEnv };
  if (settings.path !== undefined) env.PATH = settings.path;
  if (settings.home !== undefined) env.HOME = settings.home;
  return { engine, path, env };
}

/** Runs the CLI to completion; never rejects (a missing binary is code 127). */
export function runContainerCli(cli: ContainerCli, args: readonly string[], timeoutMs = 60_000): Promise<CliResult> {
  return new Promise((resolve) => {
    execFile(cli.path, [...args], { env: { ...cli.env }, timeout: timeoutMs, maxBuffer: 16 * 1024 * 1024, killSignal: "SIGKILL" }, (error, stdout, stderr) => {
      const code = error === null ? 0 : typeof error.code === "number" ? error.code : 127;
      const why = error !== null && typeof error.code !== "number" ? `${stderr}${stderr ? "\n" : ""}${error.message}` : stderr;
      resolve({ code, stdout: stdout.toString(), stderr: why.toString() });
    });
  });
}

/** The first line of an engine's complaint, for a one-line failure message. */
export function firstLine(text: string): string {
  const line = text.split("\n").find((l) => l.trim().length > 0) ?? "";
  return line.trim().slice(0, 500);
}
