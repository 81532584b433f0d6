// What `status` and GET /v1/status report: per-queue counts, active runs, the kill switch, the Redis in use.
import { z } from "zod";
import { KillSwitchState, type KillSwitch } from "../src/control/kill-switch.js";
import { runPhase } from "./run-outcome.js";
import type { Queue } from "bullmq";

/** The queues a status covers (a Queues from openQueues). */
export interface StatusQueues {
  readonly all: readonly Queue[];
  readonly sandcastleRun: Queue;
}

const Counts = z.object({ waiting: z.number(), active: z.number(), delayed: z.number(), completed: z.number(), failed: z.number() });
export type QueueCounts = z.infer<typeof Counts>;

export const StatusReport = z.object({
  redis: z.object({ url: z.string(), embedded: z.boolean() }),
  kill_switch: KillSwitchState,
  queues: z.record(z.string(), Counts),
  active_runs: z.array(z.object({ run_id: z.string(), session_id: z.string().nullable(), started_at: z.string().nullable(), phase: z.string() })),
});
export type StatusReport = z.infer<typeof StatusReport>;

export async function queueCounts(queues: StatusQueues): Promise<Record<string, QueueCounts>> {
  const out: Record<string, QueueCounts> = {};
  for (const q of queues.all) {
    const c = await q.getJobCounts("waiting", "prioritized", "active", "delayed", "completed", "failed");
    out[q.name] = {
      waiting: (c.waiting ?? 0) + (c.prioritized ?? 0),
      active: c.active ?? 0,
      delayed: c.delayed ?? 0,
      completed: c.completed ?? 0,
      failed: c.failed ?? 0,
    };
  }
  return out;
}

export async function collectStatus(queues: StatusQueues, killSwitch: KillSwitch, redis: { url: string; embedded: boolean }): Promise<StatusReport> {
  const active = await queues.sandcastleRun.getActive(0, 99);
  return {
    redis,
    kill_switch: await killSwitch.state(),
    queues: await queueCounts(queues),
    active_runs: active.map((job) => ({
      run_id: String(job.id),
      session_id: typeof job.data?.session_id === "string" ? job.data.session_id : null,
      started_at: job.processedOn ? new Date(job.processedOn).toISOString() : null,
      phase: runPhase(job.progress),
    })),
  };
}
