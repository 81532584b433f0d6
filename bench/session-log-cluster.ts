// The session-log write path on a Redis Cluster (ADR 0018): our appender following MOVED/ASK against the
// ioredis Cluster client, both writing 1 MiB batches of log lines to one stream on a real 3-master cluster.
// The baseline is the appender dialling the slot's master directly (no cluster logic at all).
// Reps alternate (direct, appender, cluster client) so a noisy neighbour slows all three alike.
import type { Cluster } from "ioredis";
import { connectRedis } from "../src/redis/connect.js";
import { StreamAppender } from "../src/redis/stream-appender.js";
import { sessionLogKey } from "../src/session-log/session-log.js";
import { TestCluster } from "../test/helpers/redis-cluster.js";
import { median, round } from "./stats.js";
import type { BenchContext } from "./sandcastle-run.js";

const LINE = Buffer.from(`${"x".repeat(127)}\n`);
const BATCH_LINES = 8192; // 1 MiB, the sink's largest batch
/** As the sink: a few batches outstanding at once. */
const IN_FLIGHT = 4;

interface Sample {
  readonly wallMs: number;
  readonly cpuMs: number;
}

async function measure(batches: number, write: (pieces: readonly Buffer[]) => Promise<unknown>): Promise<Sample> {
  const pieces = Array.from({ length: BATCH_LINES }, () => LINE);
  const cpu0 = process.cpuUsage();
  const t0 = performance.now();
  let sent = 0;
  const lanes = Array.from({ length: IN_FLIGHT }, async () => {
    while (sent < batches) {
      sent += 1;
      await write(pieces);
    }
  });
  await Promise.all(lanes);
  const cpu = process.cpuUsage(cpu0);
  return { wallMs: performance.now() - t0, cpuMs: (cpu.user + cpu.system) / 1000 };
}

export async function benchSessionLogCluster(ctx: BenchContext): Promise<object> {
  const batches = ctx.quick ? 8 : 48;
  const reps = ctx.quick ? 1 : 5;
  const cluster = await TestCluster.start();
  const client = (await connectRedis(cluster.target, "worker")) as Cluster;
  const appender = new StreamAppender(cluster.target);
  try {
    const key = sessionLogKey(ctx.prefix, "bench");
    const master = await cluster.masterOf(key);
    const direct = new StreamAppender({ kind: "url", url: `redis://127.0.0.1:${master}` });
    const samples = { direct: [] as Sample[], appender: [] as Sample[], cluster: [] as Sample[] };
    try {
      for (let r = 0; r < reps; r++) {
        samples.direct.push(await measure(batches, (p) => direct.xadd(key, 100_000, "lines", p)));
        samples.appender.push(await measure(batches, (p) => appender.xadd(key, 100_000, "lines", p)));
        // ioredis takes one buffer per argument: the batch is joined, as the sink would have to.
        samples.cluster.push(await measure(batches, (p) => client.call("XADD", key, "MAXLEN", "~", "100000", "*", "lines", Buffer.concat(p))));
        await client.del(key);
      }
    } finally {
      direct.close();
    }
    const mb = (batches * BATCH_LINES * LINE.length) / 2 ** 20;
    const per = (xs: Sample[], f: (s: Sample) => number) => median(xs.map(f));
    const ratio = (a: Sample[], f: (s: Sample) => number) => round(median(a.map((s, i) => f(s) / f(samples.direct[i]!))));
    return {
      bench: "session_log_cluster_write",
      mib_per_rep: round(mb, 1),
      reps,
      direct_mib_per_s: round(mb / (per(samples.direct, (s) => s.wallMs) / 1000), 1),
      appender_mib_per_s: round(mb / (per(samples.appender, (s) => s.wallMs) / 1000), 1),
      cluster_client_mib_per_s: round(mb / (per(samples.cluster, (s) => s.wallMs) / 1000), 1),
      appender_wall_ratio: ratio(samples.appender, (s) => s.wallMs),
      cluster_client_wall_ratio: ratio(samples.cluster, (s) => s.wallMs),
      appender_cpu_ms_per_mib: round(per(samples.appender, (s) => s.cpuMs) / mb, 2),
      cluster_client_cpu_ms_per_mib: round(per(samples.cluster, (s) => s.cpuMs) / mb, 2),
      appender_cpu_ratio: ratio(samples.appender, (s) => s.cpuMs),
      cluster_client_cpu_ratio: ratio(samples.cluster, (s) => s.cpuMs),
    };
  } finally {
    appender.close();
    client.disconnect();
    await cluster.stop();
  }
}
