// Our docker/podman sandbox provider, on Sandcastle's bind-mount provider API. One implementation for
// both CLIs: the binary is the only difference (container-args.ts holds the argv, engine-tested).
//
// Per agent phase, create() starts one container named after the run (`<run_id>`, then `<run_id>-2`, …; a run of one
// phase has its container started early, while the child's checks and Sandcastle's worktree run: ADR 0052, or takes
// its spare child's warm container, started before the run and renamed after it: ADR 0053),
// labelled with the run id and the deployment, whose main process (container-main/main.mts, under --init) ends
// itself at the run's end (its deadline plus the kill grace) and is removed then (`--rm`): no container outlives
// its run, even when the worker and the child are SIGKILLed. That process is also the container's exec server: every
// exec, `sh -c '. <secret env file> …; <command>'`, goes over its exec channel (exec-channel.ts, ADR 0049), and
// through `<cli> exec` only once that channel is gone.
// The container never sees the host repository's git dir (ADR 0033): Sandcastle's worktree stays on the
// host, unmounted, and the agent works in a repository of its own (agent-repository.ts), mounted where
// Sandcastle expects the worktree, with the host's object store read-only. Besides those it sees the prompt
// template dir (read-only, at its host path), its secret env file (read-only) and a tmpfs home.
// Secrets: the env Sandcastle hands create() (the agent's env) goes into a 0400 file in the run's 0700
// directory, never onto an argv or into the container's config (ADR 0008).
// close() hands the branch off (branch-handoff.ts) and starts ending the container through its exec server (every
// process of the agent's killed, then the container gone by itself; `<cli> rm` when the server cannot) and removing
// its file; collect() lets the host take the branch (branch-intake.ts) meanwhile, then, once nothing of the agent's
// runs, notes what it changed beyond its branch (ADR 0051).
// dispose() removes synchronously whatever a stopping child still has open; the worker removes by label
// whatever a killed child left (run-containers.ts).
import { execFileSync } from "node:child_process";
import { existsSync, rmSync } from "node:fs";
import { mkdir, rename, rm } from "node:fs/promises";
import { basename, dirname, join } from "node:path";
import {
  createBindMountSandboxProvider, type BindMountCreateOptions, type BindMountSandboxHandle, type BindMountSandboxProvider, type ExecResult,
} from "@ai-hero/sandcastle";
import { AGENT_WORKSPACE, type ContainerLimits, type ContainerNetwork } from "../contract.js";
import { firstLine, runContainerCli, type ContainerCli } from "../containers/container-cli.js";
import {
  CONTAINER_MAIN_DIR,
  copyInCommand,
  copyOutCommand,
  EGRESS_SOCKET_PATH,
  EXEC_SOCKET_PATH,
  execArgs,
  mainProcessArgv,
  removeArgs,
  renameArgs,
  runArgs,
  runLabels,
  SANDBOX_HOME,
  SECRET_ENV_PATH,
  shellCommand,
  type BindMount,
  type ContainerCommand,
  type ContainerUser,
} from "../containers/container-args.js";
import { cliExec, execResult, streamExec, type ExecProcess, type StreamIo } from "./container-exec.js";
import { ExecChannel } from "./exec-channel.js";
import type { HomeFile } from "./agent-endpoints.js";
import { makeAgentRepository, planAgentRepository, type AgentRepository } from "./agent-repository.js";
import { handBackSync } from "./container-user.js";
import { handoffRevs, handoffScript, MAX_BUNDLE_BYTES, parseHandoffStatus, type HandoffStatus } from "./branch-handoff.js";
import { IntakeRefused, takeBranch } from "./branch-intake.js";
import { fillEnvFile, removeEnvFile, writeEnvFile } from "./env-file.js";
import { refusedChanges } from "./refused-changes.js";
import { branchRef, git, resolveCommit } from "./repository.js";
import { RunFailure, messageOf } from "./run-failure.js";

/** Sandcastle's own default: where the worktree appears when its mounts do not say. */
const DEFAULT_WORKTREE_PATH = `${SANDBOX_HOME}/workspace`;
const START_TIMEOUT_MS = 120_000;
/** The exec server is a Node start away (~0.1 s); past this the container's commands go through `<cli> exec`. */
const CONNECT_WAIT_MS = 15_000;
/** While the server has not connected, how often its container is asked whether it still runs. */
const LIVENESS_CHECK_MS = 1000;
/** A server that answers nothing for this long while a command waits to start is taken for gone (stopped, say). */
const ANSWER_WAIT_MS = 30_000;
/** The server's answer to an end: it kills and answers at once; a stopped one is removed by `<cli> rm` past this. */
const END_WAIT_MS = 2000;
/** A taken warm container whose agent has said nothing yet is renamed after its run this long after the agent started. */
const RENAME_AFTER_AGENT_MS = 1000;
/** The hand-off is one git bundle: minutes would mean the agent's repository is made to stall it. */
const HANDOFF_TIMEOUT_MS = 300_000;

export interface ContainerSandboxOptions {
  readonly cli: ContainerCli;
  readonly runId: string;
  /** The run's 0700 directory: the secret env files go there. */
  readonly runDir: string;
  readonly image: string;
  readonly user: ContainerUser;
  readonly limits: ContainerLimits;
  readonly network: "default" | "none" | ContainerNetwork;
  readonly deployment: string;
  readonly templateDir: string;
  /** The host repository and its git common dir: what the agent's repositories borrow objects from and hand branches back to. */
  readonly repo: string;
  readonly commonDir: string;
  /** The run's branch: its agent repository is kept (AGENT_WORKSPACE) for the retained workspace. */
  readonly runBranch: string;
  /** A directory on disk of the run's own (RUNS_DIR/<run_id>/agent), 0700, for the agent's repositories and hand-offs. */
  readonly workDir: string;
  /** The agent CLI's config files (agent-endpoints.ts), written into each container's tmpfs home before the agent starts. */
  readonly homeFiles: readonly HomeFile[];
  /** Epoch ms of the run's end (ChildConfig.ends_by): each container's main process ends itself then. */
  readonly endsBy: number;
  /** The built container-main/ (containerMainDir()): each container's main process, mounted read-only. */
  readonly mainDir: string;
  /** The run's egress proxy (ADR 0035): its socket, which each container's main process forwards its proxy port to. */
  readonly egress?: { readonly socket: string };
  /** Where a container's exec channel going away is said (the child's stderr: a line of the run's log). */
  readonly note?: (line: string) => void;
  /** The exec channel's waits (tests shorten them). */
  readonly channelWaits?: { readonly connectMs?: number; readonly answerMs?: number };
  /** A spare child's warm container (ADR 0053): the worker it waits for (process-identity.ts), on its LABEL_SPARE_OF. */
  readonly spareOf?: string;
}

/**
 * A spare child's warm container (ADR 0053), running before its run is known, as that run takes it: its live exec
 * channel, and its files by name, in the directories the worker moved to the run's (child-spare.ts).
 */
export interface WarmContainer {
  readonly name: string;
  readonly channel: ExecChannel;
  /** The secret env file's name in the run's directory (HOME only until the run fills it). */
  readonly envFile: string;
  /** The agent's repository's directory, mounted empty, by name in the run's work directory. */
  readonly dir: string;
  readonly objectDirs: readonly string[];
}


/** A Sandcastle worktree on the host, as the phase that runs in it knows it. */
export interface PhaseWorktree {
  readonly branch: string;
  readonly worktreePath: string;
}

/** What one phase's container left, once the host has taken its branch. */
export interface PhaseCollection {
  /** Commits the branch gained. */
  readonly commits: number;
  /** Changes the agent made beyond its branch, none of them taken (refused-changes.ts). */
  readonly refused: string[];
  /** The agent left uncommitted changes. */
  readonly dirty: boolean;
}

/** One phase's container, from create() to collect(). */
interface Phase {
  readonly name: string;
  readonly repository: AgentRepository;
  bundle?: string;
  status?: HandoffStatus;
  problem?: string;
  /** The container's removal, started by close(), then what the agent changed beyond its branch; never rejects. */
  removal?: Promise<{ refused: string[] } | { problem: string }>;
}

/** A container launch() brought up: its exec server answers. */
interface Launched {
  readonly name: string;
  readonly channel: ExecChannel;
  readonly envFile: string;
  readonly objectDirs: readonly string[];
  /** Removes it, its files and its repository: for a container nobody takes. */
  readonly undo: () => Promise<void>;
}

/** A container start() brought up: its exec server answers and its agent's repository is made. */
interface Started extends Launched {
  readonly repository: AgentRepository;
}

/** The run's first container, started before Sandcastle asked for one (ADR 0052). */
interface EarlyStart {
  readonly branch: string;
  /** Its agent's repository on the host. */
  readonly dir: string;
  /** Never rejects. */
  readonly started: Promise<{ container: Started } | { error: unknown }>;
}

/** What a container is started with: its number in the run, where its repository is mounted, its env, a hook once `<cli> run` is spawned. */
interface LaunchSpec {
  readonly seq: number;
  readonly worktreePath: string;
  readonly env: Record<string, string>;
  readonly spawned?: () => void;
}

/** An open container: its secret env file and its exec channel. */
interface LiveContainer {
  readonly envFile: string;
  readonly channel: ExecChannel;
}

export class ContainerSandbox {
  private seq = 0;
  /** Open containers by name. */
  private readonly live = new Map<string, LiveContainer>();
  /** Host worktree path → its phase's container, until collect(). */
  private readonly phases = new Map<string, Phase>();
  /** Started by startEarly(), until create() takes it. */
  private early?: EarlyStart;
  /** A spare's warm container this run takes (ADR 0053): startEarly() makes the agent's repository in it. */
  private warm?: WarmContainer;
  /** Containers by our name → the engine's, once renamed (a warm container taken by its run). */
  private readonly renamed = new Map<string, string>();
  /** Renames a taken warm container after its run, once (takeWarm); undefined for any other. */
  private rename: (() => void) | undefined;

  constructor(private readonly opts: ContainerSandboxOptions) {}

  get rootless(): boolean {
    return this.opts.cli.engine === "podman" && process.getuid?.() !== 0;
  }

  /** A provider for one phase in `worktree`: Sandcastle's bind mounts of it are replaced by the agent's own repository. */
  provider(worktree: PhaseWorktree): BindMountSandboxProvider {
    return createBindMountSandboxProvider({
      name: this.opts.cli.engine,
      sandboxHomedir: SANDBOX_HOME,
      create: (options) => this.create(options, worktree),
    });
  }

  /**
   * After the phase: the host takes the branch from its bundle, checked (branch-intake.ts). Sandcastle's
   * worktree is detached first, so moving the branch leaves it clean for Sandcastle to remove. The agent's
   * repository of the run's own branch is kept for retention; the others go.
   */
  async collect(worktree: PhaseWorktree): Promise<PhaseCollection | undefined> {
    const phase = this.phases.get(worktree.worktreePath);
    if (phase === undefined) return undefined;
    this.phases.delete(worktree.worktreePath);
    const { repository } = phase;
    // The container is removed while the host takes the branch: the intake reads only the bundle, on the host.
    const removed = async (): Promise<string[]> => {
      const removal = await phase.removal;
      if (removal !== undefined && "problem" in removal) throw new Error(removal.problem);
      return removal?.refused ?? [];
    };
    try {
      if (phase.problem !== undefined)
        throw new RunFailure("agent_failed", `the branch ${repository.branch} could not be handed off from the container: ${phase.problem}`);
      // The agent never ran (its container did not come up): nothing to take.
      if (phase.status === undefined) return { commits: 0, refused: await removed(), dirty: false };
      const status = phase.status;
      const notes = status.state === "gone" ? [`deleted refs/heads/${repository.branch} (its own branch: nothing to take)`] : [];
      let commits = 0;
      if (status.state === "bundle") {
        await git(worktree.worktreePath, ["update-ref", "--no-deref", "HEAD", await git(worktree.worktreePath, ["rev-parse", "HEAD"])]);
        try {
          const tip = await takeBranch({
            repo: this.opts.repo,
            commonDir: this.opts.commonDir,
            branch: repository.branch,
            base: repository.base,
            bundle: phase.bundle!,
            runId: this.opts.runId,
            user: this.opts.user,
          });
          commits = Number(await git(this.opts.repo, ["rev-list", "--count", `${repository.base}..${tip}`]));
        } catch (error) {
          if (error instanceof IntakeRefused) throw new RunFailure("agent_failed", `the branch ${repository.branch} was not taken: ${error.message}`);
          throw error;
        }
      }
      return { commits, refused: [...(await removed()), ...notes], dirty: status.dirty };
    } finally {
      // Nothing of the agent's runs any more once its container is gone: only then is its repository moved or removed.
      await phase.removal;
      if (phase.bundle !== undefined) await rm(phase.bundle, { force: true });
      if (repository.branch === this.opts.runBranch) {
        const kept = join(this.opts.workDir, AGENT_WORKSPACE);
        await rm(kept, { recursive: true, force: true });
        await rename(repository.dir, kept).catch(() => rm(repository.dir, { recursive: true, force: true }));
      } else {
        await rm(repository.dir, { recursive: true, force: true });
      }
    }
  }

  /**
   * For exit paths: removes every container still open, and its env file; a root child hands back to the
   * repository's owner whatever it (or Sandcastle's git) made in the repository's git dir. Bounded, never throws.
   */
  disposeSync(): void {
    handBackSync(
      [this.opts.commonDir, join(this.opts.repo, ".sandcastle")].filter((p) => existsSync(p)),
      this.opts.user,
    );
    const names = [...this.live.keys()].map((name) => this.engineName(name));
    for (const { channel } of this.live.values()) channel.expectEnd();
    if (names.length > 0) {
      try {
        execFileSync(this.opts.cli.path, removeArgs(this.opts.cli.engine, names), { env: { ...this.opts.cli.env }, stdio: "ignore", timeout: 10_000 });
      } catch {
        // best effort: the worker removes the run's containers by label after the child ends
      }
    }
    for (const { envFile, channel } of this.live.values()) {
      // Should the removal have failed, the exec server still kills what it runs and ends the container with the channel.
      channel.close();
      rmSync(envFile, { force: true });
    }
    this.live.clear();
    if (this.early !== undefined) rmSync(this.early.dir, { recursive: true, force: true });
    this.early = undefined;
  }

  /**
   * Starts the container of the run's one phase, on `branch` from `base`, before Sandcastle asks for it: `podman run`
   * and the exec server's start then overlap the child's checks, Sandcastle's worktree and its set-up (ADR 0052).
   * create() takes it when it is the container asked for; a start nobody takes is removed like any other. Resolves once
   * `podman run` is under way (or the start failed before): what comes next must not delay it.
   */
  startEarly(branch: string, base: string): Promise<void> {
    if (this.seq !== 0) return Promise.resolve();
    const warm = this.warm;
    this.warm = undefined;
    if (warm !== undefined) {
      this.early = this.takeWarm(warm, branch, base);
      return Promise.resolve();
    }
    return new Promise((spawned) => {
      const started = this.start({ seq: ++this.seq, branch, startAt: base, worktreePath: DEFAULT_WORKTREE_PATH, env: { HOME: SANDBOX_HOME }, spawned }).then(
        (container) => ({ container }),
        (error: unknown) => ({ error }),
      );
      void started.then(() => spawned());
      this.early = { branch, dir: join(this.opts.workDir, this.opts.runId), started };
    });
  }

  /** The run takes a spare's warm container (ADR 0053): its first phase's container, when that is the one asked for. */
  adopt(warm: WarmContainer): void {
    this.warm = warm;
  }

  /**
   * A spare child's container, started before its run is known (ADR 0053): mounted like the run's first container, its
   * agent's repository directory empty (the run makes the repository in it), its env file HOME only. It ends at
   * `endsBy`, when its spare child ends, or once its run moved its end.
   */
  async startWarm(): Promise<WarmContainer> {
    const launched = await this.launch({ seq: ++this.seq, worktreePath: DEFAULT_WORKTREE_PATH, env: { HOME: SANDBOX_HOME } });
    return { name: launched.name, channel: launched.channel, envFile: basename(launched.envFile), dir: launched.name, objectDirs: launched.objectDirs };
  }

  /** A warm container no run took: ended through its server (else `<cli> rm`), its files removed wherever they are now. */
  async discardWarm(warm: WarmContainer, runDir: string, workDir: string): Promise<void> {
    await this.end(warm.name);
    await removeEnvFile(join(runDir, warm.envFile));
    await rm(join(workDir, warm.dir), { recursive: true, force: true });
  }

  /**
   * The warm container as the run's first: its end moved to the run's, renamed after the run, the agent's repository made
   * in its directory meanwhile. create() takes it as it takes an early container.
   */
  private takeWarm(warm: WarmContainer, branch: string, base: string): EarlyStart {
    const { cli } = this.opts;
    ++this.seq;
    const envFile = join(this.opts.runDir, warm.envFile);
    const dir = join(this.opts.workDir, warm.dir);
    const { channel } = warm;
    this.live.set(warm.name, { envFile, channel });
    channel.setDeadline((this.opts.endsBy - Date.now()) / 1000);
    const { name } = warm;
    // Renamed once its agent has spoken (or soon after it started): the engine's start costs the cores the agent's first
    // line needs. The engine's calls until then go by the name it has, whichever that is (engineName()).
    let renaming: Promise<void> | undefined;
    this.rename = () => {
      renaming ??= runContainerCli(cli, renameArgs(name, this.opts.runId), 30_000).then((renamed) => {
        if (renamed.code === 0) this.renamed.set(name, this.opts.runId);
        else this.note(`the warm container ${name} keeps its name: ${cli.engine} rename failed: ${firstLine(renamed.stderr) || `exit ${renamed.code}`}`);
      });
    };
    const undo = () => this.undo(name, dir, { started: true });
    const started = makeAgentRepository(
      { repo: this.opts.repo, commonDir: this.opts.commonDir, branch, dir, user: this.opts.user, startAt: base },
      { objectDirs: warm.objectDirs },
    ).then(
      (repository) => ({ container: { name, channel, envFile, objectDirs: warm.objectDirs, repository, undo } }),
      async (error: unknown) => {
        await undo();
        return { error };
      },
    );
    return { branch, dir, started };
  }

  /** The name the engine knows a container by: a warm container taken by its run is renamed after it. */
  private engineName(name: string): string {
    return this.renamed.get(name) ?? name;
  }

  private async create(options: BindMountCreateOptions, worktree: PhaseWorktree): Promise<BindMountSandboxHandle> {
    const worktreePath = options.mounts.find((m) => m.hostPath === options.worktreePath)?.sandboxPath ?? DEFAULT_WORKTREE_PATH;
    const env = { ...options.env, HOME: SANDBOX_HOME };
    const early = this.early;
    this.early = undefined;
    let started = early === undefined ? undefined : await this.takeEarly(early, worktree.branch, worktreePath, env);
    // Without an early container the number is taken before any await: phases (parallel implementers) are created concurrently.
    started ??= await this.start({ seq: ++this.seq, branch: worktree.branch, worktreePath, env });
    const { name, channel } = started;
    const phase: Phase = { name, repository: started.repository };
    this.phases.set(options.worktreePath, phase);
    try {
      // Through an exec's stdin into the tmpfs home: never on an argv, never on a disk.
      for (const file of this.opts.homeFiles) await this.stream(name, copyInCommand(`${SANDBOX_HOME}/${file.path}`), { input: file.content });
    } catch (error) {
      this.phases.delete(options.worktreePath);
      await started.undo();
      throw new Error(`writing the agent's config into the container failed: ${messageOf(error)}`);
    }
    return {
      worktreePath,
      exec: (command, execOpts) => this.exec(name, command, execOpts),
      copyFileIn: (hostPath, sandboxPath) => this.copy(name, copyInCommand(sandboxPath), { from: hostPath }),
      copyFileOut: async (sandboxPath, hostPath) => {
        await mkdir(dirname(hostPath), { recursive: true });
        await this.copy(name, copyOutCommand(sandboxPath), { to: hostPath });
      },
      close: async () => {
        this.rename?.();
        await this.handOff(phase, worktreePath);
        channel.expectEnd();
        // Awaited by collect(), which takes the branch from the bundle meanwhile.
        phase.removal = this.remove(name, phase.repository).catch((error: unknown) => ({ problem: messageOf(error) }));
      },
    };
  }

  /**
   * The early container, given the phase's env, when it is the one asked for: the same branch, mounted where Sandcastle
   * wants it, and the host's branch (made by Sandcastle meanwhile, when it was new) where its repository started.
   * Otherwise it is removed and the phase gets a container of its own.
   */
  private async takeEarly(early: EarlyStart, branch: string, worktreePath: string, env: Record<string, string>): Promise<Started | undefined> {
    const outcome = await early.started;
    const fits = branch === early.branch && worktreePath === DEFAULT_WORKTREE_PATH;
    if ("error" in outcome) {
      // The same start would fail the same way.
      if (fits) throw outcome.error;
      return undefined;
    }
    const container = outcome.container;
    try {
      if (fits && (await resolveCommit(this.opts.repo, branchRef(branch))) === container.repository.base) {
        await fillEnvFile(container.envFile, env);
        return container;
      }
    } catch (error) {
      await container.undo();
      throw error;
    }
    await container.undo();
    return undefined;
  }

  /** A container for one phase, up to its exec server's connection and its agent's repository made. */
  private async start(spec: LaunchSpec & { branch: string; startAt?: string }): Promise<Started> {
    let making: Promise<{ repository: AgentRepository } | { error: unknown }> | undefined;
    const launched = await this.launch(spec, (plan, dir) => {
      const repositoryOpts = {
        repo: this.opts.repo,
        commonDir: this.opts.commonDir,
        branch: spec.branch,
        dir,
        user: this.opts.user,
        ...(spec.startAt !== undefined ? { startAt: spec.startAt } : {}),
      };
      making = makeAgentRepository(repositoryOpts, plan).then(
        (repository) => ({ repository }),
        (error: unknown) => ({ error }),
      );
      return making;
    });
    const made = await making!;
    if ("error" in made) {
      await launched.undo();
      throw made.error;
    }
    return { ...launched, repository: made.repository };
  }

  /**
   * A container up to its exec server's connection. `making` starts the agent's repository in its directory while the
   * container starts (it mounts the directory, empty until then); it never rejects.
   */
  private async launch(spec: LaunchSpec, making?: (plan: { objectDirs: readonly string[] }, dir: string) => Promise<unknown>): Promise<Launched> {
    const { cli } = this.opts;
    const { seq, worktreePath } = spec;
    const name = seq === 1 ? this.opts.runId : `${this.opts.runId}-${seq}`;
    await mkdir(this.opts.workDir, { recursive: true, mode: 0o700 });
    const dir = join(this.opts.workDir, name);
    const plan = await planAgentRepository({ commonDir: this.opts.commonDir, dir });
    const made = making?.(plan, dir) ?? Promise.resolve();
    const envFile = await writeEnvFile(this.opts.runDir, `${name}.env`, spec.env, this.opts.user);
    let channel: ExecChannel;
    try {
      // Short names: a unix socket's path holds at most 107 bytes.
      channel = await ExecChannel.listen(join(this.opts.runDir, `exec-${seq}.sock`), {
        owner: this.opts.user,
        answerMs: this.opts.channelWaits?.answerMs ?? ANSWER_WAIT_MS,
        onGone: (why) => this.note(`the exec channel into ${name} ${why}: its commands go through \`${cli.engine} exec\` from now on`),
      });
    } catch (error) {
      await removeEnvFile(envFile);
      await made;
      await rm(dir, { recursive: true, force: true });
      throw error;
    }
    this.live.set(name, { envFile, channel });
    // A half-made container (name taken, mount refused, no server, no config written) must not outlive the failure.
    const undo = (started: boolean) => this.undo(name, dir, { started, pending: made });
    // Not Sandcastle's mounts (the host worktree and the host's git dir, read-write): the agent's own repository.
    const mounts: BindMount[] = [
      { hostPath: dir, sandboxPath: worktreePath },
      ...plan.objectDirs.map((objects) => ({ hostPath: objects, sandboxPath: objects, readonly: true })),
      { hostPath: this.opts.templateDir, sandboxPath: this.opts.templateDir, readonly: true },
      { hostPath: envFile, sandboxPath: SECRET_ENV_PATH, readonly: true },
      { hostPath: this.opts.mainDir, sandboxPath: CONTAINER_MAIN_DIR, readonly: true },
      { hostPath: channel.path, sandboxPath: EXEC_SOCKET_PATH },
      ...(this.opts.egress !== undefined ? [{ hostPath: this.opts.egress.socket, sandboxPath: EGRESS_SOCKET_PATH }] : []),
    ];
    // The main process ends itself at the run's end, serves the exec channel, and with an egress policy forwards to its proxy (the only way out).
    const seconds = Math.max(1, Math.ceil((this.opts.endsBy - Date.now()) / 1000));
    let args: string[];
    try {
      args = runArgs({
        engine: cli.engine,
        name,
        image: this.opts.image,
        labels: runLabels(this.opts.runId, this.opts.deployment, this.opts.spareOf),
        user: this.opts.user,
        limits: this.opts.limits,
        network: this.opts.network,
        rootless: this.rootless,
        mounts,
        workdir: worktreePath,
        command: mainProcessArgv({ seconds, exec: true, egress: this.opts.egress !== undefined }),
      });
    } catch (error) {
      await undo(false);
      throw error;
    }
    const running = runContainerCli(cli, args, START_TIMEOUT_MS);
    spec.spawned?.();
    const started = await running;
    if (started.code !== 0) {
      await undo(true);
      throw new Error(`${cli.engine} run failed: ${firstLine(started.stderr) || `exit ${started.code}`}`);
    }
    try {
      await this.awaitServer(name, channel);
    } catch (error) {
      await undo(true);
      throw error;
    }
    return { name, channel, envFile, objectDirs: plan.objectDirs, undo: () => undo(true) };
  }

  /**
   * The exec server's connection. While it has not come, whether its container still runs: a main process that
   * cannot run (no node in the image, or one too old) ends it at once (under --init the engine's run still succeeds).
   * Past the wait the container's commands go through `<cli> exec`.
   */
  private async awaitServer(name: string, channel: ExecChannel): Promise<void> {
    const waitMs = this.opts.channelWaits?.connectMs ?? CONNECT_WAIT_MS;
    const deadline = Date.now() + waitMs;
    while (!(await channel.waitConnected(Math.min(LIVENESS_CHECK_MS, deadline - Date.now())))) {
      const state = await runContainerCli(this.opts.cli, ["inspect", "--format={{.State.Running}}", name], 30_000);
      // Ended: stopped, or gone already (--rm). An engine that cannot answer now says nothing either way.
      const ended = state.code === 0 ? state.stdout.trim() === "false" : /no such (object|container)|no container with name or id/i.test(state.stderr);
      if (ended) {
        throw new Error(
          `image ${this.opts.image} cannot run the container's main process (its container ended at once): it needs \`node\` (22 or later) on PATH — each run container's main process is plain Node (its exec server, ADR 0049); build the image with \`scripts/build-sandbox-image.sh --cli ${this.opts.cli.engine}\` or add node to it`,
        );
      }
      if (Date.now() >= deadline) {
        channel.abandon(`got no connection from its exec server within ${waitMs / 1000} s`);
        return;
      }
    }
  }

  private note(line: string): void {
    if (this.opts.note !== undefined) this.opts.note(line);
    else process.stderr.write(`${line}\n`);
  }

  /** The branch out of the container as a bundle file on the host (branch-handoff.ts); a failure is kept for collect(). */
  private async handOff(phase: Phase, worktreePath: string): Promise<void> {
    const { repository } = phase;
    const bundle = join(this.opts.workDir, `${phase.name}.bundle`);
    phase.bundle = bundle;
    try {
      const command = shellCommand(handoffScript(repository.branch, repository.base), { cwd: worktreePath, stdin: true });
      const stderr = await this.stream(phase.name, command, {
        input: handoffRevs(repository.branch, repository.refs),
        to: bundle,
        maxBytes: MAX_BUNDLE_BYTES,
        timeoutMs: HANDOFF_TIMEOUT_MS,
      });
      const status = parseHandoffStatus(stderr);
      if (status === undefined) throw new Error(firstLine(stderr.split("\n").slice(-3).join("\n")) || "no status line");
      phase.status = status;
    } catch (error) {
      phase.problem = messageOf(error);
    }
  }

  /**
   * The phase's container ended, then what its agent changed beyond its branch. Its server ends it: every process of
   * the agent's killed, then the container goes by itself (`--rm`; the worker checks for a leftover after the result).
   * A server that cannot (stopped, gone) leaves it to `<cli> rm`, which the run then waits for.
   */
  private async remove(name: string, repository: AgentRepository): Promise<{ refused: string[] }> {
    const { cli } = this.opts;
    const removed = await this.end(name);
    // Read once nothing of the agent's runs any more: its repository holds still.
    const refused = await refusedChanges(repository).catch((error: unknown) => [`the agent's repository could not be read: ${messageOf(error)}`]);
    if (removed !== undefined && removed.code !== 0 && !/no such container|no container with name or id/i.test(removed.stderr)) {
      throw new Error(`${cli.engine} rm ${name} failed: ${firstLine(removed.stderr)}`);
    }
    return { refused };
  }

  /** Ends a container through its server, else by `<cli> rm` (whose answer is returned), and forgets it. */
  private async end(name: string): Promise<Awaited<ReturnType<typeof runContainerCli>> | undefined> {
    const { cli } = this.opts;
    const channel = this.live.get(name)?.channel;
    const ended = channel !== undefined && (await channel.end(END_WAIT_MS));
    const removed = ended ? undefined : await runContainerCli(cli, removeArgs(cli.engine, [this.engineName(name)]), 60_000);
    await this.forget(name);
    return removed;
  }

  /** A container nobody will take: `<cli> rm` once it was started, its files, its repository's directory (once `pending` settled). */
  private async undo(name: string, dir: string, o: { started: boolean; pending?: Promise<unknown> }): Promise<void> {
    const { cli } = this.opts;
    this.live.get(name)?.channel.expectEnd();
    if (o.started) await runContainerCli(cli, removeArgs(cli.engine, [this.engineName(name)]), 30_000);
    await this.forget(name);
    await o.pending;
    await rm(dir, { recursive: true, force: true });
  }

  private async forget(name: string): Promise<void> {
    const container = this.live.get(name);
    this.live.delete(name);
    if (container === undefined) return;
    container.channel.close();
    await removeEnvFile(container.envFile);
  }

  /** `command` in the container: over its exec channel while there is one, else `<cli> exec`. */
  private async run(name: string, command: ContainerCommand): Promise<ExecProcess> {
    const channel = this.live.get(name)?.channel;
    return (await channel?.start(command)) ?? cliExec(this.opts.cli, execArgs(this.engineName(name), command), command.stdin);
  }

  /** One file through an exec's stdin or stdout, streamed (binary-safe, any size). */
  private async copy(name: string, command: ContainerCommand, file: { from: string } | { to: string }): Promise<void> {
    try {
      await this.stream(name, command, file);
    } catch (error) {
      throw new Error(`copying ${"from" in file ? `${file.from} into` : "out of"} the container failed: ${messageOf(error)}`);
    }
  }

  private async stream(name: string, command: ContainerCommand, io: StreamIo): Promise<string> {
    return streamExec(await this.run(name, command), io);
  }

  private async exec(
    name: string,
    command: string,
    opts: { onLine?: (line: string) => void; cwd?: string; sudo?: boolean; stdin?: string } = {},
  ): Promise<ExecResult> {
    if (opts.sudo) {
      // no-new-privileges: sudo cannot work here, and a hook asking for it should say so plainly.
      return { stdout: "", stderr: "sudo is not available in a sandcastle-queue container (no-new-privileges)\n", exitCode: 1 };
    }
    const proc = await this.run(name, shellCommand(command, { ...(opts.cwd !== undefined ? { cwd: opts.cwd } : {}), stdin: opts.stdin !== undefined }));
    // The agent's own exec is the one whose lines are read: a taken warm container is renamed at its first line (or a second on).
    let onLine = opts.onLine;
    const rename = this.rename;
    if (onLine !== undefined && rename !== undefined) {
      const read = onLine;
      setTimeout(rename, RENAME_AFTER_AGENT_MS).unref();
      onLine = (line) => {
        read(line);
        rename();
      };
    }
    return execResult(proc, { ...(onLine !== undefined ? { onLine } : {}), ...(opts.stdin !== undefined ? { input: opts.stdin } : {}) });
  }
}
