// Thin processor for sandcastle-run: validate the payload, then hand it to src/sandcastle.
import { UnrecoverableError, type Processor } from "bullmq";
import { formatIssues } from "../src/invalid-input.js";
import { SandcastleRunRequest } from "../queues/index.js";
import type { WorkerDeps } from "./deps.js";

export async function createSandcastleRunProcessor(_deps: WorkerDeps): Promise<Processor> {
  return async (job) => {
    const parsed = SandcastleRunRequest.safeParse(job.data);
    if (!parsed.success) throw new UnrecoverableError(`invalid sandcastle-run request: ${formatIssues(parsed.error)}`);
    throw new UnrecoverableError("not implemented: the sandcastle-run processor has not landed yet");
  };
}
