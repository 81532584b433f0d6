// The end of a run, one home whichever way it comes. Its runner lets go of what the run held (containers, run
// directory, slot) once its child has ended; its worker then records how it ended (the session log's marker, the
// retained workspace, a failed run's stored result). A run whose worker was lost gets both from the worker that
// declares it lost (ADR 0003), at once.
import type { AuditLog } from "../../audit/audit-log.js";
import type { Logger } from "../../log.js";
import type { StreamAppender } from "../../redis/stream-appender.js";
import { markerCommand, sessionLogKey, type RunMarker } from "../../session-log/session-log.js";
import type { RunContainers } from "../containers/run-containers.js";
import { containerEngine, effectiveSandbox, type SandcastleRunRequest, type SandcastleRunResult } from "../contract.js";
import type { Kept, RunRetention } from "../retention/run-retention.js";
import type { ChildSpare } from "./child-spare.js";
import { removeRunDir } from "./run-dir.js";
import type { RunSlots } from "./run-slots.js";

/** The last line of a run's log: how it ended, with the result's one reason. */
export function endLine(result: SandcastleRunResult): string {
  const reason = result.failure_reason ?? result.skip_reason;
  return `── run ${result.status}${reason !== null ? ` (${reason})` : ""}${result.message ? `: ${result.message}` : ""}`;
}

/** The session log's marker of a run's end: live readers stop on it (ADR 0011). */
export function endedMarker(result: SandcastleRunResult): RunMarker {
  return { event: "ended", run_id: result.run_id, status: result.status, failure_reason: result.failure_reason, skip_reason: result.skip_reason };
}

/** Where what a run holds is let go (the runner's deps have these). */
export interface RunHoldings {
  readonly configDir: string;
  readonly slots: RunSlots;
  readonly log: Logger;
  readonly containers?: RunContainers;
  /** Taken by a run (runner.ts); started again once the run's result is readable (RunEnd). */
  readonly spare?: ChildSpare;
}

/** What the run got to hold besides its slot: its run directory, and containers that may outlive its child. */
export interface Held {
  readonly runDir: boolean;
  readonly containers: boolean;
}

/** The runner's end, whatever the run's status: its containers, its run directory, its slot (the next spare: RunEnd). */
export async function releaseRun(runId: string, held: Held, deps: RunHoldings): Promise<void> {
  if (held.containers && deps.containers) {
    const removed = await deps.containers.removeRun(runId).catch((err: Error) => {
      deps.log.warn({ run_id: runId, err: err.message }, "could not remove the run's containers; the next worker start will");
      return 0;
    });
    if (removed > 0) deps.log.info({ run_id: runId, containers: removed }, "removed containers the run's child left");
  }
  if (held.runDir) await removeRunDir(deps.configDir, runId);
  await deps.slots
    .release(runId)
    .catch((err: Error) => deps.log.warn({ run_id: runId, err: err.message }, "could not release the run slot; its lease will lapse"));
}

export interface RunEndDeps {
  readonly configDir: string;
  readonly slots: RunSlots;
  readonly containers: RunContainers;
  readonly retention: RunRetention;
  readonly audit: AuditLog;
  readonly log: Logger;
  /** The session logs' own connection: a marker sent on it follows the run's lines, in order. */
  readonly logWriter: StreamAppender;
  readonly prefix: string;
  /** queues/'s side: a failed run's result beside its job (ADR 0010). */
  readonly storeResult: (result: SandcastleRunResult) => Promise<unknown>;
  /** Run directories of this deployment left by runs that are no longer active, whatever their age (ADR 0044). */
  readonly sweepRunDirs: () => Promise<unknown>;
  readonly spare?: ChildSpare;
}

/** What waits for a run's result to be readable starts this long after the run ended at the latest (its job's events lost). */
const RESULT_WAIT_MS = 5000;
/**
 * A container run's containers end by themselves once the host has its branch (ADR 0051); this long after its result
 * the worker removes any still there (an engine that failed its own `--rm`, an agent that outlived its server's end).
 */
const LEFTOVER_CHECK_MS = 10_000;

/** The worker's end of a run: how it ended, on record. */
export class RunEnd {
  /** Workspaces being kept after their run's result. */
  private readonly keeping = new Set<Promise<void>>();
  /** Per run, what starts once its result is readable: a run's own end goes first, on a machine of two cores. */
  private readonly afterResult = new Map<string, () => void>();

  constructor(private readonly deps: RunEndDeps) {}

  /** A marker in the session's log (after the run's lines: same connection, in order); best-effort. */
  async mark(sessionId: string, marker: RunMarker): Promise<void> {
    const { deps } = this;
    await deps.logWriter
      .command(markerCommand(sessionLogKey(deps.prefix, sessionId), marker))
      .catch((err: Error) => deps.log.warn({ run_id: marker.run_id, err: err.message }, "could not write a run marker to the session log"));
  }

  /**
   * A run its runner ended: its marker, a failed run's result stored beside its job, and its workspace claimed for
   * retention. The copy, and the next spare child, start once the result is readable (resultReadable(), ADR 0051).
   */
  async ended(request: SandcastleRunRequest, result: SandcastleRunResult): Promise<void> {
    const { deps } = this;
    await this.mark(request.session_id, endedMarker(result));
    const rest = await deps.retention.claim(result.run_id, request, result).catch((err: Error) => {
      deps.log.warn({ run_id: result.run_id, err: err.message }, "could not retain the run's workspace");
      return null;
    });
    if (result.status !== "ok") await deps.storeResult(result);
    const runId = result.run_id;
    const start = () => {
      clearTimeout(timer);
      this.afterResult.delete(runId);
      deps.spare?.refill();
      if (containerEngine(effectiveSandbox(request)) !== undefined) setTimeout(() => void this.removeLeftovers(runId), LEFTOVER_CHECK_MS).unref();
      if (rest === null) return;
      const keeping = this.retain(runId, rest()).finally(() => this.keeping.delete(keeping));
      this.keeping.add(keeping);
    };
    const timer = setTimeout(start, RESULT_WAIT_MS);
    this.afterResult.set(runId, start);
  }

  private async removeLeftovers(runId: string): Promise<void> {
    const { deps } = this;
    const removed = await deps.containers.removeRun(runId).catch((err: Error) => {
      deps.log.warn({ run_id: runId, err: err.message }, "could not remove the run's containers; the next worker start will");
      return 0;
    });
    if (removed > 0) deps.log.warn({ run_id: runId, containers: removed }, "removed containers still there after the run");
  }

  /** The run's job has completed or failed (the worker's events): its result is readable. */
  resultReadable(runId: string): void {
    this.afterResult.get(runId)?.();
  }

  /** Once every workspace still being kept is (a stopping worker waits for them: a half-made one would only be swept). */
  async settled(): Promise<void> {
    for (const start of [...this.afterResult.values()]) start();
    await Promise.allSettled([...this.keeping]);
  }

  /** A runner that threw, with no result: what retention gathered of its log goes. */
  async abandoned(runId: string): Promise<void> {
    this.deps.spare?.refill();
    await this.deps.retention.discard(runId).catch(() => {});
  }

  /** A run whose worker was lost: what its runner would have let go, and how it ended, at once; failures logged. */
  async lost(runId: string, request: SandcastleRunRequest | undefined, result: SandcastleRunResult): Promise<void> {
    const { deps } = this;
    await Promise.all([
      deps.audit.emit({ type: "sandcastle_run_failed", run_id: runId, failure_reason: "worker_lost", exit_code: null }),
      removeRunDir(deps.configDir, runId).then(() => deps.sweepRunDirs()),
      // Kept once its containers are gone, so nothing of the run still writes to its worktree.
      deps.containers.removeRun(runId).then(() => (request !== undefined ? this.retain(runId, deps.retention.keepLost(runId, request, result)) : undefined)),
      deps.slots.release(runId),
      deps.storeResult(result),
      request !== undefined ? this.mark(request.session_id, endedMarker(result)) : null,
    ]).catch((e: Error) => deps.log.error({ run_id: runId, err: e.message }, "could not record a lost run"));
  }

  /** Retention is best-effort: the run's outcome stands whatever happens to its copy (its reap is scheduled by it). */
  private async retain(runId: string, keep: Promise<Kept | null>): Promise<void> {
    await keep.catch((err: Error) => {
      this.deps.log.warn({ run_id: runId, err: err.message }, "could not retain the run's workspace");
    });
  }
}
