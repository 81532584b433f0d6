// Worker-side cleanup of run containers. A container lives outside the child's process group, so a
// child that is SIGKILLed (timeout, kill switch, cancel) or dies with its worker can leave one behind:
// the worker removes a run's containers once its child has ended without an ok result, and a worker's start removes those of
// runs that are no longer active, and the warm containers of workers that are gone. Only containers labelled with this
// deployment are ever touched.
import type { ContainerEngine } from "../contract.js";
import { identityLives } from "../../process-identity.js";
import { firstLine, resolveContainerCli, runContainerCli, type ContainerCli } from "./container-cli.js";
import { listArgs, parseLines, parseRunIds, removeArgs, runIdsArgs, type ListedContainer as Listed } from "./container-args.js";

export interface SweepOutcome {
  /** Run ids whose containers were removed. */
  readonly removed: string[];
  /** Engines that could not be asked (no daemon, no permission): one line each. */
  readonly unreachable: string[];
}

export class RunContainers {
  /** Both engines' CLIs, as the worker finds them (an absent one is simply not asked). */
  static forEngines(settings: Parameters<typeof resolveContainerCli>[1], deployment: string): RunContainers {
    return new RunContainers({ docker: resolveContainerCli("docker", settings), podman: resolveContainerCli("podman", settings) }, deployment);
  }

  constructor(
    private readonly clis: Partial<Record<ContainerEngine, ContainerCli>>,
    private readonly deployment: string,
  ) {}

  /**
   * Removes every container of the run, whichever engine made it: those labelled with it, and a warm container it took
   * (ADR 0053), which is named after it. Returns how many.
   */
  async removeRun(runId: string): Promise<number> {
    let removed = 0;
    const ofRun = (c: Listed) => c.runId === runId || c.name === runId || c.name.startsWith(`${runId}-`);
    for (const cli of this.distinctClis()) {
      const listed = await this.list(cli);
      if (!("containers" in listed)) continue;
      const ids = listed.containers.filter(ofRun).map((c) => c.id);
      if (ids.length === 0) continue;
      await this.remove(cli, ids);
      removed += ids.length;
    }
    return removed;
  }

  /**
   * Removes the containers of runs that are not active. Containers are listed before the active runs are
   * asked for: a container made after the listing is not seen, one made before belongs to an active run.
   */
  async sweep(activeRunIds: () => Promise<ReadonlySet<string>>): Promise<SweepOutcome> {
    const listed: Array<{ cli: ContainerCli; containers: Listed[] }> = [];
    const unreachable: string[] = [];
    for (const cli of this.distinctClis()) {
      const found = await this.list(cli);
      if ("problem" in found) unreachable.push(`${cli.engine} (${cli.path}): ${found.problem}`);
      else if (found.containers.length > 0) listed.push({ cli, containers: found.containers });
    }
    if (listed.length === 0) return { removed: [], unreachable };
    const active = await activeRunIds();
    const removed = new Set<string>();
    for (const { cli, containers } of listed) {
      // A warm container waits for a run of a live worker's (ADR 0053): it ends by itself with that worker's spare child.
      const stale = containers.filter((c) => !active.has(c.runId) && !active.has(c.name) && (c.spareOf === undefined || identityLives(c.spareOf) === false));
      if (stale.length === 0) continue;
      await this.remove(cli, stale.map((c) => c.id));
      for (const c of stale) removed.add(c.runId);
    }
    return { removed: [...removed], unreachable };
  }

  /** This deployment's containers on one engine, with their labels and names. */
  private async list(cli: ContainerCli): Promise<{ containers: Listed[] } | { problem: string }> {
    const out = await runContainerCli(cli, listArgs(this.deployment), 30_000);
    if (out.code !== 0) return { problem: firstLine(out.stderr) };
    const ids = parseLines(out.stdout);
    if (ids.length === 0) return { containers: [] };
    // A container removed between the two calls makes inspect fail for it: keep the ones it answered.
    const labels = await runContainerCli(cli, runIdsArgs(ids), 30_000);
    return { containers: parseRunIds(labels.stdout) };
  }

  private async remove(cli: ContainerCli, ids: readonly string[]): Promise<void> {
    const rm = await runContainerCli(cli, removeArgs(cli.engine, ids), 60_000);
    // Gone already (its own child removed it meanwhile) is what we wanted.
    if (rm.code !== 0 && !/no such container|no container with name or id/i.test(rm.stderr)) {
      throw new Error(`${cli.engine} rm failed: ${firstLine(rm.stderr)}`);
    }
  }

  /** With SANDCASTLE_CONTAINER_CLI both engines are one binary: ask it once. */
  private distinctClis(): ContainerCli[] {
    const seen = new Map<string, ContainerCli>();
    for (const cli of Object.values(this.clis)) if (cli !== undefined && !seen.has(cli.path)) seen.set(cli.path, cli);
    return [...seen.values()];
  }
}
