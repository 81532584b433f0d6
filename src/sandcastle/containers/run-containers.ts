// Worker-side cleanup of run containers. A container lives outside the child's process group, so a
// child that is SIGKILLed (timeout, kill switch, cancel) or dies with its worker can leave one behind:
// the worker removes a run's containers once its child has ended without an ok result, and a worker's start removes those of
// runs that are no longer active. Only containers labelled with this deployment are ever touched.
import type { ContainerEngine } from "../contract.js";
import { firstLine, resolveContainerCli, runContainerCli, type ContainerCli } from "./container-cli.js";
import { listArgs, parseLines, parseRunIds, removeArgs, runIdsArgs } from "./container-args.js";

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

  /** Removes every container of the run (by its labels, whichever engine made it); returns how many. */
  async removeRun(runId: string): Promise<number> {
    let removed = 0;
    for (const cli of this.distinctClis()) {
      const listed = await runContainerCli(cli, listArgs(this.deployment, runId), 30_000);
      if (listed.code !== 0) continue;
      const ids = parseLines(listed.stdout);
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
    const listed: Array<{ cli: ContainerCli; containers: Array<{ id: string; runId: string }> }> = [];
    const unreachable: string[] = [];
    for (const cli of this.distinctClis()) {
      const out = await runContainerCli(cli, listArgs(this.deployment), 30_000);
      if (out.code !== 0) {
        unreachable.push(`${cli.engine} (${cli.path}): ${firstLine(out.stderr)}`);
        continue;
      }
      const ids = parseLines(out.stdout);
      if (ids.length === 0) continue;
      // A container removed between the two calls makes inspect fail for it: keep the ones it answered.
      const labels = await runContainerCli(cli, runIdsArgs(ids), 30_000);
      listed.push({ cli, containers: parseRunIds(labels.stdout) });
    }
    if (listed.length === 0) return { removed: [], unreachable };
    const active = await activeRunIds();
    const removed = new Set<string>();
    for (const { cli, containers } of listed) {
      const stale = containers.filter((c) => !active.has(c.runId));
      if (stale.length === 0) continue;
      await this.remove(cli, stale.map((c) => c.id));
      for (const c of stale) removed.add(c.runId);
    }
    return { removed: [...removed], unreachable };
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
