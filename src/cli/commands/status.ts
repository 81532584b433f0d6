// `status [--json]`: per-queue counts, the kill switch and the Redis in use (queues/status.ts).
import { collectStatus } from "../../../queues/index.js";
import { describeTarget } from "../../redis/target.js";
import { formatBytes, listRetained } from "../../sandcastle/retention/retained-runs.js";
import { runtimeDeployment, type Runtime } from "../runtime.js";

export async function statusCommand(rt: Runtime, opts: { json?: boolean }): Promise<number> {
  // What is retained now: a run still being kept is counted once it is (sandbox list waits for it).
  const kept = await listRetained(rt.config.runsDir, runtimeDeployment(rt), 0);
  const retained = { count: kept.length, bytes: kept.reduce((n, r) => n + r.bytes, 0), runs_dir: rt.config.runsDir };
  const report = { ...(await collectStatus(rt.queues, rt.killSwitch, { url: describeTarget(rt.site.target), embedded: rt.site.embedded !== null })), retained };
  if (opts.json) {
    process.stdout.write(`${JSON.stringify(report)}\n`);
    return 0;
  }
  const lines = [`redis: ${report.redis.url}${report.redis.embedded ? " (embedded)" : ""}`];
  lines.push(`kill switch: ${report.kill_switch.active ? "ON" : "off"}${report.kill_switch.file ? ` (file ${report.kill_switch.file_path})` : ""}`);
  lines.push("queue               waiting  active  delayed  completed  failed");
  for (const [name, c] of Object.entries(report.queues)) {
    lines.push(
      `${name.padEnd(18)} ${String(c.waiting).padStart(8)} ${String(c.active).padStart(7)} ${String(c.delayed).padStart(8)} ${String(c.completed).padStart(10)} ${String(c.failed).padStart(7)}`,
    );
  }
  lines.push(`retained workspaces: ${retained.count} (${formatBytes(retained.bytes)}) in ${retained.runs_dir}`);
  for (const run of report.active_runs) lines.push(`active run ${run.run_id} session ${run.session_id ?? "?"} since ${run.started_at ?? "?"} (${run.phase})`);
  process.stdout.write(`${lines.join("\n")}\n`);
  return 0;
}
