// request.sandbox → a Sandcastle SandboxProvider, imported only when used.
//   dry_run: true (built-ins) → noSandbox, whatever the request says (and nothing is ever pushed)
//   docker / podman        → our container provider (container-provider.ts): the CLI, the image
//                            (request.image, else SANDCASTLE_IMAGE) and the settings the worker wrote
//   vercel / daytona       → need the optional packages @vercel/sandbox / @daytona/sdk and their
//                            credentials in the env manifest (provider-credentials.ts)
//   custom:<name>          → the operator's module in SANDCASTLE_PROVIDERS_DIR (custom-sandbox.ts), dry or not
//   noSandbox              → the agent runs on the host, in a git worktree of repo_workdir
// A provider that cannot be used ends the run `failed` / provider_unavailable before anything starts.
import type { SandboxProvider } from "@ai-hero/sandcastle";
import { join } from "node:path";
import {
  containerEngine, customProviderName, KILL_GRACE_MS, type ChildConfig, type ContainerEngine, type ContainerNetwork, type SandboxField, type SandboxSettings,
} from "../contract.js";
import { parseRule, type EgressRule } from "../egress/allowlist.js";
import { EgressProxy, type EgressDecision } from "../egress/egress-proxy.js";
import { PROXY_ENV } from "../containers/sandbox-shell.js";
import { firstLine, resolveContainerCli, runContainerCli, type ContainerCli } from "../containers/container-cli.js";
import { containerMainDir, imageExistsArgs } from "../containers/container-args.js";
import { findCustomProvider } from "../containers/custom-providers.js";
import { isolateGlobalGitConfig, type IsolatedGitConfig } from "./host-git-config.js";
import { repositoryUser } from "./container-user.js";
import type { HomeFile } from "./agent-endpoints.js";
import type { ContainerSandboxOptions, PhaseCollection, PhaseWorktree, WarmContainer } from "./container-provider.js";
import { objectDirs } from "./agent-repository.js";
import { providerCredentials } from "./provider-credentials.js";
import { RunFailure, messageOf } from "./run-failure.js";

export type SandboxName = SandboxField;

export interface SandboxChoice {
  readonly name: SandboxName;
  /** A provider for one agent phase in `worktree` (noSandbox: each with its own global git config, see host-git-config.ts). */
  provider(worktree: PhaseWorktree): SandboxProvider;
  /**
   * After a phase in `worktree`: docker/podman take its branch from the container's hand-off (ADR 0033);
   * undefined for sandboxes whose agent wrote the host repository itself (its commits are already there).
   */
  collect?(worktree: PhaseWorktree): Promise<PhaseCollection | undefined>;
  /**
   * docker/podman: the container of a run's one phase on `branch` (from `base`) starts now, before Sandcastle asks for
   * it (ADR 0052); resolves once it is under way.
   */
  startEarly?(branch: string, base: string): Promise<void>;
  /** docker/podman: its first container is a spare's warm one (ADR 0053), whose image is known to be there. */
  readonly warm?: boolean;
  /** The agent runs on the host (noSandbox): its CLI must be on the host's PATH. */
  readonly runsOnHost: boolean;
  /** The env the agent gets: the run's, less what opens the provider itself (vercel/daytona credentials). */
  readonly agentEnv: Record<string, string>;
  /** Synchronous: it runs on the child's exit path too. */
  dispose(): void;
}

/** A spare's warm container and its egress proxy, when one of `fit`'s shape is up (ADR 0053; warm-spare.ts). */
export interface WarmTaker {
  take(fit: string): Promise<{ container: WarmContainer; proxy: EgressProxy | undefined } | undefined>;
}

/** What a sandbox needs beyond the request: the run's config and directory. */
export interface SandboxSite {
  readonly config: ChildConfig;
  /** The run's 0700 directory (where the config file is): container secret files go there. */
  readonly runDir: string;
  /** Config files the agent's CLI needs in its home (agent-endpoints.ts): written into each container's tmpfs home. */
  readonly homeFiles?: readonly HomeFile[];
  /** Each connection the run's egress proxy allowed or denied (ADR 0035). */
  readonly onEgress?: (decision: EgressDecision) => void;
}

const OPTIONAL_PACKAGES: Partial<Record<SandboxName, string>> = {
  vercel: "@vercel/sandbox",
  daytona: "@daytona/sdk",
};

export function runsOnHost(name: SandboxName): boolean {
  return name === "noSandbox";
}

function settingsFor(name: SandboxName, site: SandboxSite): SandboxSettings {
  const settings = site.config.sandbox_settings;
  if (settings === undefined)
    throw new RunFailure("provider_unavailable", `sandbox "${name}" needs the worker's sandbox settings, which this config does not hold`);
  return settings;
}

function cliFor(engine: ContainerEngine, settings: SandboxSettings): ContainerCli {
  const cli = resolveContainerCli(engine, {
    containerCli: settings.container_cli,
    engineEnv: settings.engine_env,
    path: process.env.PATH,
    home: process.env.HOME,
  });
  if (cli === undefined) {
    throw new RunFailure(
      "provider_unavailable",
      settings.container_cli !== null
        ? `sandbox "${engine}": SANDCASTLE_CONTAINER_CLI (${settings.container_cli}) is not an executable file`
        : `sandbox "${engine}" needs the \`${engine}\` CLI, which is not on PATH (or set SANDCASTLE_CONTAINER_CLI)`,
    );
  }
  return cli;
}

function imageFor(name: SandboxName, site: SandboxSite, settings: SandboxSettings): string {
  const image = site.config.request.image ?? settings.default_image;
  if (image === null) throw new RunFailure("provider_unavailable", `sandbox "${name}" needs an image: set SANDCASTLE_IMAGE or the request's image`);
  return image;
}

async function checkImage(cli: ContainerCli, image: string): Promise<void> {
  const out = await runContainerCli(cli, imageExistsArgs(cli.engine, image), 60_000);
  if (out.code === 0) return;
  const missing = (cli.engine === "podman" && out.code === 1 && out.stderr.trim() === "") || /no such image|image not known/i.test(out.stderr);
  if (missing) {
    throw new RunFailure(
      "provider_unavailable",
      `sandbox "${cli.engine}": image ${image} is not there; build it with \`scripts/build-sandbox-image.sh --cli ${cli.engine}\` (no registry needed) or set SANDCASTLE_IMAGE / the request's image to one that is`,
    );
  }
  throw new RunFailure("provider_unavailable", `sandbox "${cli.engine}": the engine did not answer (${cli.path} exit ${out.code}): ${firstLine(out.stderr)}`);
}

export async function checkSandboxAvailable(name: SandboxName, site: SandboxSite): Promise<void> {
  const engine = containerEngine(name);
  if (engine !== undefined) {
    const settings = settingsFor(name, site);
    await checkImage(cliFor(engine, settings), imageFor(name, site, settings));
    return;
  }
  const custom = customProviderName(name);
  if (custom !== undefined) {
    const found = findCustomProvider(site.config.sandbox_settings?.providers_dir, custom);
    if ("problem" in found) throw new RunFailure("provider_unavailable", `sandbox "${name}": ${found.problem}`);
    return;
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

/** Each container's main process as built (plain Node, no imports of the project), mounted read-only into it. */
const CONTAINER_MAIN = containerMainDir();

/**
 * How a container run reaches the network (ADR 0035): with an allowlist, no network of its own and the run's
 * egress proxy on a socket in the run's directory; else none, the engine's bridge, or the operator's network. A
 * config without a policy (written by another tool) keeps the request's "none" and the operator's network.
 */
function containerNetwork(config: ChildConfig, settings: SandboxSettings): "default" | "none" | ContainerNetwork {
  const policy = config.egress;
  if (policy === undefined) return config.request.network === "none" ? "none" : (settings.network ?? "default");
  switch (policy.mode) {
    case "none":
    case "allowlist":
      return "none";
    case "open":
      return "default";
    case "operator":
      return policy.network;
  }
}

/** The egress proxy's socket in the run's directory. */
const EGRESS_SOCKET = "egress.sock";

/** The run's egress proxy, for an allowlist (ADR 0035). */
export async function egressProxy(config: ChildConfig, site: SandboxSite): Promise<EgressProxy | undefined> {
  const policy = config.egress;
  if (policy?.mode !== "allowlist") return undefined;
  const rules = policy.allow.map(parseRule).filter((r): r is EgressRule => !("problem" in r));
  return EgressProxy.listen(join(site.runDir, EGRESS_SOCKET), {
    rules,
    hosts: new Map(Object.entries(policy.hosts)),
    onDecision: (d) => site.onEgress?.(d),
  });
}

/** A run's containers as the config shapes them, and `fit`: what a warm container must match to be its first (ADR 0053). */
export interface ContainerShape {
  readonly options: Omit<ContainerSandboxOptions, "egress">;
  readonly fit: () => Promise<string>;
}

/** `commonDir`: the repository's git common dir (its owner is the containers' user). */
export async function containerShape(name: SandboxName, site: SandboxSite, commonDir: string): Promise<ContainerShape> {
  const { config } = site;
  const engine = containerEngine(name);
  if (engine === undefined) throw new RunFailure("provider_unavailable", `sandbox "${name}" is not a container engine`);
  const settings = settingsFor(name, site);
  if (config.work_dir === undefined)
    throw new RunFailure("provider_unavailable", `sandbox "${name}" needs the run's work directory, which this config does not hold`);
  const options = {
    cli: cliFor(engine, settings),
    runId: config.run_id,
    runDir: site.runDir,
    image: imageFor(name, site, settings),
    user: repositoryUser(commonDir, engine),
    limits: settings.limits,
    network: containerNetwork(config, settings),
    mainDir: CONTAINER_MAIN,
    deployment: settings.deployment,
    templateDir: config.request.prompt_template_dir,
    repo: config.request.repo_workdir,
    commonDir,
    runBranch: config.request.branch,
    workDir: config.work_dir,
    homeFiles: site.homeFiles ?? [],
    endsBy: config.ends_by !== undefined ? Date.parse(config.ends_by) : Date.now() + config.request.timeout_minutes * 60_000 + KILL_GRACE_MS,
  };
  // Everything `<cli> run` is given but the run's own name, files and end; the allowlist too (its proxy is taken with it).
  // Worked out only when a warm container is there to compare with.
  const fit = async () => JSON.stringify([
    options.cli,
    options.image,
    options.user,
    options.limits,
    options.network,
    options.templateDir,
    options.repo,
    commonDir,
    await objectDirs(commonDir),
    options.deployment,
    config.egress ?? null,
  ]);
  return { options, fit };
}

/** A container or VM: the agent never touches the host's git config. */
function remote(
  name: SandboxName,
  agentEnv: Record<string, string>,
  make: (worktree: PhaseWorktree) => SandboxProvider,
  dispose: () => void = () => {},
): SandboxChoice {
  return { name, runsOnHost: false, agentEnv, provider: make, dispose };
}

/** `commonDir`: the repository's git common dir (its owner is a container's user). */
export async function buildSandbox(name: SandboxName, site: SandboxSite, commonDir: string, warm?: WarmTaker): Promise<SandboxChoice> {
  const { config } = site;
  const runId = config.run_id;
  const agentEnv = config.env;
  try {
    if (containerEngine(name) !== undefined) {
      const { ContainerSandbox } = await import("./container-provider.js");
      const shape = await containerShape(name, site, commonDir);
      // A spare's warm container of the same shape is the run's first (ADR 0053), its egress proxy with it.
      const taken = warm !== undefined ? await warm.take(await shape.fit()) : undefined;
      const proxy = taken !== undefined ? taken.proxy : await egressProxy(config, site);
      // A warm container's proxy listens in the spare's directory, which the worker moved to the run's.
      const socket = taken !== undefined ? join(site.runDir, EGRESS_SOCKET) : proxy?.socketPath;
      const containers = new ContainerSandbox({ ...shape.options, ...(socket !== undefined && proxy !== undefined ? { egress: { socket } } : {}) });
      if (taken !== undefined) containers.adopt(taken.container);
      const dispose = () => {
        containers.disposeSync();
        void proxy?.close();
      };
      return {
        ...remote(name, proxy !== undefined ? { ...agentEnv, ...PROXY_ENV } : agentEnv, (worktree) => containers.provider(worktree), dispose),
        collect: (worktree) => containers.collect(worktree),
        startEarly: (branch, base) => containers.startEarly(branch, base),
        warm: taken !== undefined,
      };
    }
    const custom = customProviderName(name);
    if (custom !== undefined) {
      const { loadCustomProvider } = await import("./custom-sandbox.js");
      const factory = await loadCustomProvider(config.sandbox_settings?.providers_dir ?? null, custom);
      factory({ runId }); // fails now, before any worktree, when the factory returns no usable provider
      return remote(name, agentEnv, () => factory({ runId }));
    }
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
          agentEnv,
          provider: () => {
            if (!ownGitConfig) return noSandbox();
            const gitConfig = isolateGlobalGitConfig(site.runDir);
            isolated.push(gitConfig);
            return noSandbox({ env: gitConfig.env });
          },
          dispose: () => {
            for (const gitConfig of isolated.splice(0)) gitConfig.dispose();
          },
        };
      }
      case "vercel": {
        const { vercel } = await import("@ai-hero/sandcastle/sandboxes/vercel");
        const credentials = providerCredentials("vercel", agentEnv);
        return remote(name, credentials.agentEnv, () => vercel(credentials.options));
      }
      case "daytona": {
        const { daytona } = await import("@ai-hero/sandcastle/sandboxes/daytona");
        const credentials = providerCredentials("daytona", agentEnv);
        return remote(name, credentials.agentEnv, () => daytona(credentials.options));
      }
    }
    throw new RunFailure("provider_unavailable", `sandbox "${name}" is not known`);
  } catch (error) {
    if (error instanceof RunFailure) throw error;
    throw new RunFailure("provider_unavailable", `sandbox "${name}" could not be loaded: ${messageOf(error)}`);
  }
}
