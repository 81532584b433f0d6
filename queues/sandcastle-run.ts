// The sandcastle-run queue: one job = one Sandcastle run in one subprocess.
import { randomUUID } from "node:crypto";
import type { JobsOptions, Queue } from "bullmq";
import type { RedisClient } from "../src/redis/connect.js";
import type { AuditLog } from "../src/audit/audit-log.js";
import { InvalidInputError, parseInput } from "../src/invalid-input.js";
import type { RunSlots } from "../src/sandcastle/worker/run-slots.js";
import { EnvManifestError, readEnvManifest } from "../src/sandcastle/worker/env-manifest.js";
import { markerCommand, RETAIN_SECONDS, sessionLogKey } from "../src/session-log/session-log.js";
import {
  bareResult, customProviderName, SandcastleRunRequest, SandcastleRunResult, SKIP_MESSAGES, type SandcastleRunRequestInput,
} from "../src/sandcastle/contract.js";
import { findCustomProvider } from "../src/sandcastle/containers/custom-providers.js";
import { runsDirProblems } from "../src/sandcastle/retention/runs-dir-guard.js";
import type { EgressRule } from "../src/sandcastle/egress/allowlist.js";
import { egressProblems, type EgressSettings } from "../src/sandcastle/egress/run-egress.js";
import { Deployment, deploymentLabel } from "../src/sandcastle/deployment.js";
import type { RedisTarget } from "../src/redis/target.js";
import { KEEP_COMPLETED, KEEP_FAILED } from "./job-retention.js";

export { SandcastleRunRequest, SandcastleRunResult };
export type { SandcastleRunRequestInput };

export const SANDCASTLE_RUN_QUEUE = "sandcastle-run";
export const RUN_JOB = "run";

/** An agent run is not idempotent: one attempt, never retried behind the caller's back. */
export const RUN_JOB_OPTIONS: JobsOptions = {
  attempts: 1,
  /** Each job.log entry is one batch of up to 100 redacted lines. */
  keepLogs: 2000,
  removeOnComplete: KEEP_COMPLETED,
  removeOnFail: KEEP_FAILED,
};

/** Where a request's names are looked up, and what it may ask for: every producer of this deployment passes the same (`runRequestPaths`). */
export interface RunRequestPaths {
  readonly envManifestDir: string;
  /** SANDCASTLE_PROVIDERS_DIR: a `custom:<name>` sandbox must name a module there. */
  readonly providersDir?: string;
  /** RUNS_DIR: with it, a request whose repo_workdir or prompt_template_dir lies in it is refused here (the worker refuses it too). */
  readonly runsDir?: string;
  /** SANDCASTLE_EGRESS_PERMIT and _OPEN: with them, a request asking for more network is refused here (the worker refuses it too). */
  readonly egress?: Pick<EgressSettings, "permit" | "open">;
}

/** The paths and egress limits of a loaded config (ENV_MANIFEST_DIR, SANDCASTLE_PROVIDERS_DIR, RUNS_DIR, SANDCASTLE_EGRESS_*). */
export function runRequestPaths(config: {
  readonly ENV_MANIFEST_DIR: string;
  readonly SANDCASTLE_PROVIDERS_DIR?: string | undefined;
  readonly runsDir: string;
  readonly egressPermit: readonly EgressRule[];
  readonly SANDCASTLE_EGRESS_OPEN: "0" | "1";
}): RunRequestPaths {
  return {
    envManifestDir: config.ENV_MANIFEST_DIR,
    runsDir: config.runsDir,
    egress: { permit: config.egressPermit, open: config.SANDCASTLE_EGRESS_OPEN === "1" },
    ...(config.SANDCASTLE_PROVIDERS_DIR ? { providersDir: config.SANDCASTLE_PROVIDERS_DIR } : {}),
  };
}

export interface EnqueueRunDeps extends RunRequestPaths {
  /** Needed for on_capacity "skip": the reservation that makes "skip at once" exact (ADR 0001). */
  readonly slots?: RunSlots;
  readonly audit?: AuditLog;
  /** With it, the session's log gets a `queued` marker, so a live reader knows a run is to come. */
  readonly redis?: RedisClient;
}

export type EnqueueRunOutcome =
  | { readonly runId: string; readonly request: SandcastleRunRequest; readonly skipped: null }
  /** No job was added: the cap was full and the request asked to be skipped rather than wait. */
  | { readonly runId: string; readonly request: SandcastleRunRequest; readonly skipped: SandcastleRunResult };

/**
 * This deployment (key prefix + Redis) as its run directories name it (ADR 0044); a run is its own when this
 * queue holds the run's job (what shows that a directory made before directories were marked is its own).
 */
export function runsDeployment(queue: Queue, prefix: string, target: RedisTarget): Deployment {
  return new Deployment(deploymentLabel(prefix, target), async (runId) => (await queue.getJob(runId)) !== undefined);
}

/** run ids are BullMQ job ids: no ':' and never all digits. */
export function newRunId(): string {
  return `run-${randomUUID()}`;
}

export async function enqueueRun(
  queue: Queue,
  input: unknown,
  deps: EnqueueRunDeps,
): Promise<EnqueueRunOutcome> {
  const request = parseInput(SandcastleRunRequest, input, "sandcastle-run request");
  let manifestVars: readonly string[];
  try {
    manifestVars = (await readEnvManifest(deps.envManifestDir, request.env_manifest_name)).vars;
  } catch (err) {
    if (err instanceof EnvManifestError)
      throw new InvalidInputError("sandcastle-run request", `env_manifest_name: ${err.message}`, [{ field: "env_manifest_name", problem: err.message }]);
    throw err;
  }
  const overlap = Object.keys(request.extra_env).filter((k) => manifestVars.includes(k));
  if (overlap.length > 0) {
    const problem = `${overlap.join(", ")} also named by env manifest "${request.env_manifest_name}"; extra_env may not override manifest variables`;
    throw new InvalidInputError("sandcastle-run request", `extra_env: ${problem}`, [{ field: "extra_env", problem }]);
  }
  const custom = customProviderName(request.sandbox);
  if (custom !== undefined) {
    const found = findCustomProvider(deps.providersDir, custom);
    if ("problem" in found) throw new InvalidInputError("sandcastle-run request", `sandbox: ${found.problem}`, [{ field: "sandbox", problem: found.problem }]);
  }
  if (deps.egress !== undefined) {
    const problems = egressProblems(request, deps.egress);
    if (problems.length > 0) throw new InvalidInputError("sandcastle-run request", problems.map((p) => `${p.field}: ${p.problem}`).join("; "), problems);
  }
  if (deps.runsDir !== undefined) {
    const problems = await runsDirProblems(deps.runsDir, request);
    if (problems.length > 0) throw new InvalidInputError("sandcastle-run request", problems.map((p) => `${p.field}: ${p.problem}`).join("; "), problems);
  }
  const runId = newRunId();
  if (request.on_capacity === "skip") {
    if (!deps.slots) throw new Error("enqueueRun: on_capacity skip needs deps.slots");
    if (!(await deps.slots.acquire(runId))) {
      await deps.audit?.emit({ type: "sandcastle_run_skipped", run_id: runId, skip_reason: "concurrency_cap" });
      return { runId, request, skipped: capacitySkip(runId, request, deps.audit ? 1 : 0) };
    }
  }
  // A reserved ("skip") run goes to the head of the line so its reservation is not held long.
  await queue.add(RUN_JOB, request, { ...RUN_JOB_OPTIONS, jobId: runId, lifo: request.on_capacity === "skip" });
  if (deps.redis) {
    const key = sessionLogKey(queue.opts.prefix ?? "bull", request.session_id);
    await deps.redis.multi().call(...markerCommand(key, { event: "queued", run_id: runId })).expire(key, RETAIN_SECONDS).exec();
  }
  return { runId, request, skipped: null };
}

function capacitySkip(runId: string, request: SandcastleRunRequest, auditRows: number): SandcastleRunResult {
  return {
    ...bareResult(runId, request.branch),
    status: "skipped",
    duration_seconds: 0,
    audit_row_count: auditRows,
    skip_reason: "concurrency_cap",
    failure_reason: null,
    exit_code: null,
    message: SKIP_MESSAGES.concurrency_cap,
  };
}
