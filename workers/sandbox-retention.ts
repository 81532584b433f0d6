// Thin processor for sandbox-retention: a `reap` removes a retained run workspace when its time has come.
// At start the worker sweeps what is past its time (all of it when SANDBOX_RETENTION_HOURS=0) and makes
// sure every directory still retained has its reap job.
import { DelayedError, UnrecoverableError, type Job } from "bullmq";
import { ReapPayload, runsDeployment, scheduleReap, SANDBOX_RETENTION_QUEUE, type ReapResult } from "../queues/index.js";
import { formatIssues, parseWithWording } from "../src/invalid-input.js";
import { expiresAt } from "../src/sandcastle/retention/retained-runs.js";
import { reapRetained, sweepRetained } from "../src/sandcastle/retention/retention-sweep.js";
import { EngineSandboxes } from "../src/sandcastle/containers/sandbox-shell.js";
import type { QueueWorkerSpec, WorkerDeps } from "./deps.js";

export async function createSandboxRetentionWorker(deps: WorkerDeps): Promise<QueueWorkerSpec> {
  const { config, log } = deps;
  const runsDir = config.runsDir;
  const liveness = EngineSandboxes.forEngines({
    containerCli: config.SANDCASTLE_CONTAINER_CLI ?? null,
    engineEnv: config.engineEnv,
    path: deps.secretSource.PATH,
    home: deps.secretSource.HOME,
  });

  const windowMs = config.SANDBOX_RETENTION_HOURS * 3_600_000;
  const off = windowMs === 0;
  // RUNS_DIR may be shared with other deployments: only this one's workspaces are swept, reaped, rescheduled (ADR 0044).
  const deployment = runsDeployment(deps.queues.sandcastleRun, config.SCQ_KEY_PREFIX, deps.target);
  const swept = await sweepRetained({
    runsDir,
    deployment,
    windowMs,
    off,
    liveness,
    activeRunIds: async () => new Set((await deps.queues.sandcastleRun.getActive()).map((j) => String(j.id))),
  });
  if (swept.removed.length > 0) log.info({ run_ids: swept.removed, retention_off: off }, "removed retained run workspaces past their time");
  if (swept.open.length > 0) log.warn({ run_ids: swept.open }, "kept retained run workspaces past their time: their sandbox is open");
  if (swept.unowned.length > 0)
    log.warn(
      { run_ids: swept.unowned, runs_dir: runsDir },
      "left retained run workspaces that name no deployment (made before deployments were marked) and whose runs this deployment's Redis does not know: remove them by hand once no deployment needs them",
    );
  // A reap job lost with an earlier Redis is made again; an existing one is moved to the expiry under this window.
  for (const meta of swept.kept) await scheduleReap(deps.queues.sandboxRetention, { run_id: meta.run_id }, expiresAt(meta, windowMs));

  const processor = async (job: Job, token?: string): Promise<ReapResult> => {
    const parsed = parseWithWording(ReapPayload, job.data);
    if (!parsed.success) throw new UnrecoverableError(`invalid sandbox-retention payload: ${formatIssues(parsed.error)}`);
    const runId = parsed.data.run_id;
    const outcome = await reapRetained(runsDir, runId, windowMs, liveness, deployment);
    if ("retryAt" in outcome) {
      log.info({ run_id: runId, at: new Date(outcome.retryAt).toISOString(), why: outcome.why }, "reap postponed");
      await job.moveToDelayed(outcome.retryAt, token);
      throw new DelayedError();
    }
    if (outcome.removed) log.info({ run_id: runId }, "retained run workspace removed: its time is up");
    return { run_id: runId, removed: outcome.removed, note: outcome.note };
  };

  return { name: SANDBOX_RETENTION_QUEUE, processor, concurrency: 1 };
}
