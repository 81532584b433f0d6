import { SANDBOX_RETENTION_QUEUE } from "../queues/index.js";
import type { QueueWorkerSpec } from "./deps.js";
import { notImplemented } from "./placeholder.js";

export function createSandboxRetentionWorker(): QueueWorkerSpec {
  return { name: SANDBOX_RETENTION_QUEUE, processor: notImplemented(SANDBOX_RETENTION_QUEUE), concurrency: 1 };
}
