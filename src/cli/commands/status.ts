// `status [--json]`: per-queue counts, the kill switch and the Redis in use.
import { z } from "zod";
import { describeTarget } from "../../redis/target.js";
import { KillSwitchState } from "../../control/kill-switch.js";
import type { Runtime } from "../runtime.js";

const Counts = z.object({ waiting: z.number(), active: z.number(), delayed: z.number(), completed: z.number(), failed: z.number() });

export const StatusReport = z.object({
  redis: z.object({ url: z.string(), embedded: z.boolean() }),
  kill_switch: KillSwitchState,
  queues: z.record(z.string(), Counts),
  active_runs: z.array(z.object({ run_id: z.string(), session_id: z.string().nullable(), started_at: z.string().nullable() })),
});
export type StatusReport = z.infer<typeof StatusReport>;

export async function collectStatus(rt: Runtime): Promise<StatusReport> {
  const queues: Record<string, z.infer<typeof Counts>> = {};
  for (const q of rt.queues.all) {
    const c = await q.getJobCounts("waiting", "prioritized", "active", "delayed", "completed", "failed");
    queues[q.name] = {
      waiting: (c.waiting ?? 0) + (c.prioritized ?? 0),
      active: c.active ?? 0,
      delayed: c.delayed ?? 0,
      completed: c.completed ?? 0,
      failed: c.failed ?? 0,
    };
  }
  const active = await rt.queues.sandcastleRun.getActive(0, 99);
  return {
    redis: { url: describeTarget(rt.site.target), embedded: rt.site.embedded !== null },
    kill_switch: await rt.killSwitch.state(),
    queues,
    active_runs: active.map((job) => ({
      run_id: String(job.id),
      session_id: typeof job.data?.session_id === "string" ? job.data.session_id : null,
      started_at: job.processedOn ? new Date(job.processedOn).toISOString() : null,
    })),
  };
}

export async function statusCommand(rt: Runtime, opts: { json?: boolean }): Promise<number> {
  const report = await collectStatus(rt);
  if (opts.json) {
    process.stdout.write(`${JSON.stringify(report)}\n`);
    return 0;
  }
  const lines = [`redis: ${report.redis.url}${report.redis.embedded ? " (embedded)" : ""}`];
  lines.push(`kill switch: ${report.kill_switch.active ? "ON" : "off"}${report.kill_switch.file ? ` (file ${report.kill_switch.file_path})` : ""}`);
  lines.push("queue               waiting  active  delayed  completed  failed");
  for (const [name, c] of Object.entries(report.queues)) {
    lines.push(`${name.padEnd(18)} ${String(c.waiting).padStart(8)} ${String(c.active).padStart(7)} ${String(c.delayed).padStart(8)} ${String(c.completed).padStart(10)} ${String(c.failed).padStart(7)}`);
  }
  for (const run of report.active_runs) lines.push(`active run ${run.run_id} session ${run.session_id ?? "?"} since ${run.started_at ?? "?"}`);
  process.stdout.write(`${lines.join("\n")}\n`);
  return 0;
}
