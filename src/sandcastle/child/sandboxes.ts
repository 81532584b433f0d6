// request.sandbox → a Sandcastle SandboxProvider, imported only when used.
//   dry_run: true          → noSandbox, whatever the request says (and nothing is ever pushed)
//   docker / podman        → @ai-hero/sandcastle/sandboxes/<name>; needs the CLI on PATH and the
//                            image Sandcastle expects (`sandcastle docker build-image`)
//   vercel / daytona       → need the optional packages @vercel/sandbox / @daytona/sdk
//   noSandbox              → the agent runs on the host, in a git worktree of repo_workdir
// A provider that cannot be used ends the run `failed` / provider_unavailable before anything starts.
import type { SandboxProvider } from "@ai-hero/sandcastle";
import type { SandcastleRunRequest } from "../contract.js";
import { findExecutable } from "./executables.js";
import { isolateGlobalGitConfig, type IsolatedGitConfig } from "./host-git-config.js";
import { RunFailure, messageOf } from "./run-failure.js";

export type SandboxName = SandcastleRunRequest["sandbox"];

export interface SandboxChoice {
  readonly name: SandboxName;
  /** A provider for one agent phase (noSandbox: each with its own global git config, see host-git-config.ts). */
  provider(): SandboxProvider;
  /** The agent runs on the host (noSandbox): its CLI must be on the host's PATH. */
  readonly runsOnHost: boolean;
  dispose(): void;
}

const OPTIONAL_PACKAGES: Partial<Record<SandboxName, string>> = {
  vercel: "@vercel/sandbox",
  daytona: "@daytona/sdk",
};

const CLIS: Partial<Record<SandboxName, string>> = {
  docker: "docker",
  podman: "podman",
};

export function effectiveSandbox(request: SandcastleRunRequest): SandboxName {
  return request.dry_run ? "noSandbox" : request.sandbox;
}

export function runsOnHost(name: SandboxName): boolean {
  return name === "noSandbox";
}

export async function checkSandboxAvailable(name: SandboxName): Promise<void> {
  const cli = CLIS[name];
  if (cli !== undefined && findExecutable(cli, process.env.PATH) === undefined) {
    throw new RunFailure("provider_unavailable", `sandbox "${name}" needs the \`${cli}\` CLI, which is not on PATH`);
  }
  const pkg = OPTIONAL_PACKAGES[name];
  if (pkg !== undefined) {
    try {
      await import(pkg);
    } catch (error) {
      const code = (error as NodeJS.ErrnoException).code;
      const why =
        code === "ERR_MODULE_NOT_FOUND" || code === "MODULE_NOT_FOUND"
          ? `the optional package ${pkg} is not installed (npm install ${pkg})`
          : `the optional package ${pkg} failed to load: ${messageOf(error)}`;
      throw new RunFailure("provider_unavailable", `sandbox "${name}" is unavailable: ${why}`);
    }
  }
}

/** A container or VM: the agent never touches the host's git config. */
function remote(name: SandboxName, make: () => SandboxProvider): SandboxChoice {
  return { name, runsOnHost: false, provider: make, dispose: () => {} };
}

/** `agentEnv` is only read to avoid Sandcastle's "overlapping env keys" error. */
export async function buildSandbox(name: SandboxName, runId: string, agentEnv: Record<string, string>): Promise<SandboxChoice> {
  try {
    switch (name) {
      case "noSandbox": {
        const { noSandbox } = await import("@ai-hero/sandcastle/sandboxes/no-sandbox");
        // Concurrent phases (parallel implementers) writing one global config collide on its lock
        // ("could not lock config file"): one file per phase.
        const isolated: IsolatedGitConfig[] = [];
        const ownGitConfig = !("GIT_CONFIG_GLOBAL" in agentEnv);
        return {
          name,
          runsOnHost: true,
          provider: () => {
            if (!ownGitConfig) return noSandbox();
            const gitConfig = isolateGlobalGitConfig(runId);
            isolated.push(gitConfig);
            return noSandbox({ env: gitConfig.env });
          },
          dispose: () => {
            for (const gitConfig of isolated.splice(0)) gitConfig.dispose();
          },
        };
      }
      case "docker": {
        const { docker } = await import("@ai-hero/sandcastle/sandboxes/docker");
        return remote(name, () => docker());
      }
      case "podman": {
        const { podman } = await import("@ai-hero/sandcastle/sandboxes/podman");
        return remote(name, () => podman());
      }
      case "vercel": {
        const { vercel } = await import("@ai-hero/sandcastle/sandboxes/vercel");
        return remote(name, () => vercel());
      }
      case "daytona": {
        const { daytona } = await import("@ai-hero/sandcastle/sandboxes/daytona");
        return remote(name, () => daytona());
      }
    }
  } catch (error) {
    if (error instanceof RunFailure) throw error;
    throw new RunFailure("provider_unavailable", `sandbox "${name}" could not be loaded: ${messageOf(error)}`);
  }
}
