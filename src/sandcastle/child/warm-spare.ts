// A spare child's warm container (ADR 0053): started while the spare waits for its run, shaped like the deployment's last
// container run (the worker's warm line, SpareWarmth), in the spare's own directories. Its run takes it when the run's
// containers have the same shape (sandboxes.ts, containerShape's `fit`) and the worker moved those directories to the
// run's; otherwise it is ended and its files removed, and the run starts its own. It ends with its spare child (its exec
// channel closes), at its own end (WARM_LIFETIME_MS), or once a run took it, at that run's end.
import { containerEngine, effectiveSandbox, type ChildConfig, type SpareWarmth } from "../contract.js";
import type { EgressDecision, EgressProxy } from "../egress/egress-proxy.js";
import type { ContainerSandbox, WarmContainer } from "./container-provider.js";
import { configEnv } from "../hardened-git.js";
import { hostGitSettings } from "./container-user.js";
import { commonDirOf } from "./repository.js";
import { containerShape, egressProxy, type WarmTaker } from "./sandboxes.js";

/** A warm container no run took ends by itself this long after it started (its spare child then has none). */
export const WARM_LIFETIME_MS = 6 * 3_600_000;

interface Warm {
  readonly repo: string;
  readonly commonDir: string;
  readonly fit: string;
  readonly sandbox: ContainerSandbox;
  readonly proxy: EgressProxy | undefined;
  readonly container: WarmContainer;
}

export class WarmSpare implements WarmTaker {
  /** Where its files are: the spare's directories until the worker moved them to its run's. */
  private runDir: string;
  private workDir: string;
  private moved = false;
  private settled: Warm | undefined;
  private released = false;
  private taken = false;

  private constructor(
    line: SpareWarmth["warm"],
    private readonly starting: Promise<Warm | undefined>,
  ) {
    this.runDir = line.run_dir;
    this.workDir = line.config.work_dir ?? "";
    void starting.then((warm) => (this.settled = warm));
  }

  /** Starts the container; a start that fails leaves a plain spare (the run starts its own container, which says why). */
  static start(line: SpareWarmth["warm"], onEgress: (d: EgressDecision) => void): WarmSpare {
    let spare: WarmSpare | undefined;
    // What its container says (its exec channel gone, say) is its run's to hear; before a run took it, nobody's.
    const note = (text: string) => {
      if (spare?.taken === true) process.stderr.write(`${text}\n`);
    };
    spare = new WarmSpare(line, startWarm(line, onEgress, note).catch(() => undefined));
    return spare;
  }

  /** The run's hand-over: the worker moved the spare's directories to `runDir` and `config.work_dir`, or left them. */
  handedOver(moved: boolean, runDir: string, config: ChildConfig): void {
    if (!moved || config.work_dir === undefined) return;
    this.moved = true;
    this.runDir = runDir;
    this.workDir = config.work_dir;
  }

  /** The git common dir of `repo` when the container is up for that repository (what the run's checks would find). */
  commonDirOf(repo: string): string | undefined {
    return this.settled?.repo === repo ? this.settled.commonDir : undefined;
  }

  /** The container and its egress proxy when the run's containers have its shape, `fit`; else it is discarded. */
  async take(fit: string): Promise<{ container: WarmContainer; proxy: EgressProxy | undefined } | undefined> {
    const warm = await this.starting;
    if (warm === undefined || this.released) return undefined;
    if (this.moved && warm.fit === fit && warm.container.channel.open) {
      this.released = true;
      this.taken = true;
      return { container: warm.container, proxy: warm.proxy };
    }
    await this.discard();
    return undefined;
  }

  /** Not the run's: ended, its proxy closed, its files removed where they are now. */
  async discard(): Promise<void> {
    const warm = await this.starting;
    if (warm === undefined || this.released) return;
    this.released = true;
    await warm.sandbox.discardWarm(warm.container, this.runDir, this.workDir);
    await warm.proxy?.close();
  }

  /** Exit paths: synchronous, bounded (ContainerSandbox.disposeSync); a start still under way ends with the channel. */
  disposeSync(): void {
    if (this.released || this.settled === undefined) return;
    this.released = true;
    this.settled.sandbox.disposeSync();
    void this.settled.proxy?.close();
  }
}

async function startWarm(line: SpareWarmth["warm"], onEgress: (d: EgressDecision) => void, note: (line: string) => void): Promise<Warm | undefined> {
  const { config } = line;
  const name = effectiveSandbox(config.request);
  if (containerEngine(name) === undefined || config.request.parallel_implementers > 1) return undefined;
  const site = { config, runDir: line.run_dir, onEgress };
  // As for a run: git here runs no repository command, and a root spare trusts the repository by its exact paths; in
  // this call's env only, as the spare's run (whatever it is) sets its own.
  const settings = hostGitSettings(config.request.repo_workdir, name);
  const commonDir = await commonDirOf(config.request.repo_workdir, { ...process.env, ...configEnv(settings, process.env) });
  const shape = await containerShape(name, site, commonDir);
  const { ContainerSandbox } = await import("./container-provider.js");
  const proxy = await egressProxy(config, site);
  const sandbox = new ContainerSandbox({
    ...shape.options,
    endsBy: Date.now() + WARM_LIFETIME_MS,
    spareOf: line.spare_of,
    note,
    ...(proxy !== undefined ? { egress: { socket: proxy.socketPath } } : {}),
  });
  try {
    return { repo: config.request.repo_workdir, commonDir, fit: await shape.fit(), sandbox, proxy, container: await sandbox.startWarm() };
  } catch (error) {
    await proxy?.close();
    throw error;
  }
}
