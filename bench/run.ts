// `npm run bench`: every figure against a baseline measured in the same run (ratios, not absolutes:
// the machines are shared and noisy). One JSON line per benchmark on stdout. `--quick` for a smoke run.
import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { openQueues } from "../queues/index.js";
import { createLogger } from "../src/log.js";
import { connectRedis } from "../src/redis/connect.js";
import { EmbeddedRedis } from "../src/redis/embedded.js";
import { benchClassification } from "./classification.js";
import { benchAgentImage, benchContainerOverhead, benchFirstLine, benchRetainedFootprint } from "./container-run.js";
import { benchExpiryLateness, benchMargotThroughput } from "./margot-intent.js";
import { benchDryRun, benchPipeline, benchRealPath, benchStartLatency, type BenchContext } from "./sandcastle-run.js";
import { benchSessionLogCluster } from "./session-log-cluster.js";

const quick = process.argv.includes("--quick");
const only = process.argv.find((a) => a.startsWith("--only="))?.slice(7).split(",");

async function main(): Promise<void> {
  const log = createLogger("silent");
  const dataDir = mkdtempSync(join(tmpdir(), "scqb-"));
  const embedded = await EmbeddedRedis.joinOrStart({ dataDir, log });
  const target = { kind: "socket", path: embedded.socketPath } as const;
  const redis = await connectRedis(target, "worker");
  const prefix = "{scq-bench}";
  const queues = openQueues(redis, prefix);
  const ctx: BenchContext = { target, redis, queues, prefix, log, quick };
  const benches: Array<[string, (c: BenchContext) => Promise<object>]> = [
    ["start-latency", benchStartLatency],
    ["pipeline", benchPipeline],
    ["real-path", benchRealPath],
    ["dry-run", benchDryRun],
    ["container-overhead", benchContainerOverhead],
    ["first-line", benchFirstLine],
    ["retained-footprint", benchRetainedFootprint],
    ["agent-image", benchAgentImage],
    ["margot-throughput", benchMargotThroughput],
    ["classification", benchClassification],
    ["expiry-lateness", benchExpiryLateness],
    ["session-log-cluster", benchSessionLogCluster],
  ];
  try {
    for (const [name, fn] of benches) {
      if (only && !only.includes(name)) continue;
      process.stderr.write(`bench: ${name}…\n`);
      process.stdout.write(`${JSON.stringify(await fn(ctx))}\n`);
    }
  } finally {
    await queues.close();
    redis.disconnect();
    await embedded.stop();
    rmSync(dataDir, { recursive: true, force: true });
  }
}

await main();
