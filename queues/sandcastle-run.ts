// The sandcastle-run queue: one job = one Sandcastle run in one subprocess.
import { randomUUID } from "node:crypto";
import type { JobsOptions, Queue } from "bullmq";
import { InvalidInputError, parseInput } from "../src/invalid-input.js";
import { EnvManifestError, readEnvManifest } from "../src/sandcastle/env-manifest.js";
import { SandcastleRunRequest, SandcastleRunResult, type SandcastleRunRequestInput } from "../src/sandcastle/contract.js";
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

export interface EnqueueRunDeps {
  readonly envManifestDir: string;
}

/** run ids are BullMQ job ids: no ':' and never all digits. */
export function newRunId(): string {
  return `run-${randomUUID()}`;
}

export async function enqueueRun(
  queue: Queue,
  input: unknown,
  deps: EnqueueRunDeps,
): Promise<{ runId: string; request: SandcastleRunRequest }> {
  const request = parseInput(SandcastleRunRequest, input, "sandcastle-run request");
  let manifestVars: readonly string[];
  try {
    manifestVars = (await readEnvManifest(deps.envManifestDir, request.env_manifest_name)).vars;
  } catch (err) {
    if (err instanceof EnvManifestError) throw new InvalidInputError("sandcastle-run request", `env_manifest_name: ${err.message}`);
    throw err;
  }
  const overlap = Object.keys(request.extra_env).filter((k) => manifestVars.includes(k));
  if (overlap.length > 0) {
    throw new InvalidInputError(
      "sandcastle-run request",
      `extra_env: ${overlap.join(", ")} also named by env manifest "${request.env_manifest_name}"; extra_env may not override manifest variables`,
    );
  }
  const runId = newRunId();
  await queue.add(RUN_JOB, request, { ...RUN_JOB_OPTIONS, jobId: runId });
  return { runId, request };
}
