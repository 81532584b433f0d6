// One run child started ahead of its run: node and the child's modules (Sandcastle's library the heaviest) loaded
// while no run waits, so a run starts on a warm process. Only the built-in child knows `--config-on-stdin`. The spare
// gets the same argv prefix, env and process group as a child started for its run; its run comes as the first line
// of its stdin (SpareHandoff), and a spare whose worker let it go (stdin closed) exits by itself.
import type { ChildCommand } from "./child-command.js";
import type { SpareHandoff } from "../contract.js";
import { groupAlive, terminateTree } from "./process-tree.js";
import { startChild, type StartedChild } from "./supervise.js";

const running = (child: StartedChild) => child.nodeChildProcess.exitCode === null && child.nodeChildProcess.signalCode === null;

/** A spare has no run yet: it works where nothing of a run is (the hand-over moves it to the run's repository). */
const SPARE_CWD = "/";
/**
 * The next spare starts this long after one was taken, or at its run's result if that comes first (RunEnd): by then the
 * run's own start-up is over (a container run's agent starts within ~0.5–1.5 s on 2 cores), and any real agent works
 * far longer, so the next run of a backlog starts on a warm child without a spare's start slowing this run's.
 */
export const REFILL_AFTER_TAKE_MS = 3000;

export class ChildSpare {
  private spare: StartedChild | null = null;
  private closed = false;

  constructor(
    private readonly child: ChildCommand,
    private readonly env: Readonly<Record<string, string>>,
  ) {}

  /** Starts a spare when there is none alive. */
  refill(): void {
    if (this.closed || (this.spare !== null && running(this.spare))) return;
    const spare = startChild(this.child.command, [...this.child.argsPrefix, "run", "--config-on-stdin", "--json"], SPARE_CWD, this.env);
    if (spare.pid === undefined) {
      void spare.catch(() => {});
      return;
    }
    this.spare = spare;
    spare.nodeChildProcess.once("exit", () => {
      if (this.spare === spare) this.spare = null;
    });
  }

  /** The spare, handed its run; null when there is none alive (the run starts a child of its own). */
  take(handoff: SpareHandoff): StartedChild | null {
    const spare = this.spare;
    if (spare === null || !running(spare) || spare.stdin === null) return null;
    this.spare = null;
    setTimeout(() => this.refill(), REFILL_AFTER_TAKE_MS).unref();
    // Should it die this instant, supervise() sees it exit: the write must not throw on the way.
    spare.stdin.on("error", () => {});
    spare.stdin.write(`${JSON.stringify(handoff)}\n`);
    return spare;
  }

  /** Ends the spare (its group, by its pid) and starts no other. */
  async close(): Promise<void> {
    this.closed = true;
    const spare = this.spare;
    this.spare = null;
    if (spare?.pid === undefined) return;
    const exited = running(spare) ? new Promise((resolve) => spare.nodeChildProcess.once("exit", resolve)) : Promise.resolve();
    if (groupAlive(spare.pid)) await terminateTree(spare.pid, 0);
    await exited;
    // Nobody reads a spare's output: its streams are let go, not drained.
    spare.all?.destroy();
    spare.stdin?.destroy();
    void spare.catch(() => {});
  }
}
