// What producers import: every queue, opened on one connection with the hash-tagged prefix.
import { Queue, type ConnectionOptions } from "bullmq";
import { MARGOT_INTENT_QUEUE } from "./margot-intent.js";
import { SANDBOX_RETENTION_QUEUE } from "./sandbox-retention.js";
import { SANDCASTLE_RUN_QUEUE } from "./sandcastle-run.js";

export * from "./margot-intent.js";
export * from "./sandbox-retention.js";
export * from "./run-cancel.js";
export * from "./run-outcome.js";
export * from "./sandcastle-run.js";
export * from "./schemas.js";
export * from "./status.js";
export * from "./worker-presence.js";

export const QUEUE_NAMES = [SANDCASTLE_RUN_QUEUE, MARGOT_INTENT_QUEUE, SANDBOX_RETENTION_QUEUE] as const;
export type QueueName = (typeof QUEUE_NAMES)[number];

export interface Queues {
  readonly sandcastleRun: Queue;
  readonly margotIntent: Queue;
  readonly sandboxRetention: Queue;
  readonly all: readonly Queue[];
  close(): Promise<void>;
}

export function openQueues(connection: ConnectionOptions, prefix: string): Queues {
  const open = (name: QueueName) => new Queue(name, { connection, prefix });
  const sandcastleRun = open(SANDCASTLE_RUN_QUEUE);
  const margotIntent = open(MARGOT_INTENT_QUEUE);
  const sandboxRetention = open(SANDBOX_RETENTION_QUEUE);
  const all = [sandcastleRun, margotIntent, sandboxRetention];
  return {
    sandcastleRun,
    margotIntent,
    sandboxRetention,
    all,
    close: async () => {
      await Promise.allSettled(all.map((q) => q.close()));
    },
  };
}
