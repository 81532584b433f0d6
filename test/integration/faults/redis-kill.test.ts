// Fault: Redis is SIGKILLed under load and restarted on its AOF (appendfsync always, as the embedded Redis
// runs). Guarantee: every enqueue that was acknowledged is run, exactly once; workers ride out the outage.
import { resolve } from "node:path";
import { Queue } from "bullmq";
import { Redis } from "ioredis";
import { afterEach, beforeEach, describe, expect, it } from "vitest";
import { enqueueRun } from "../../../queues/index.js";
import { CliProcess, stopAllCli, waitFor } from "../../helpers/cli.js";
import { DurableRedis } from "../../helpers/durable-redis.js";
import { RunScope } from "../../helpers/run-scope.js";
import { redisAt } from "../../helpers/scope.js";

const TALLY_CHILD = resolve(import.meta.dirname, "../../fixtures/children/tally-child.sh");
const ACKNOWLEDGED = 1000;
/** Acknowledged enqueues after which Redis is SIGKILLed (down ~1 s each time). */
const KILL_AT = [250, 600];
const TERMINAL = new Set(["sandcastle_run_ok", "sandcastle_run_failed", "sandcastle_run_skipped"]);

let redis: DurableRedis;
let s: RunScope;
beforeEach(async () => {
  redis = await new DurableRedis().start();
  s = new RunScope(redisAt(redis.url));
  // This scope's own connections see the outages too: expected, not news.
  s.redis.on("error", () => {});
  s.queue.on("error", () => {});
});
afterEach(async () => {
  await stopAllCli();
  await s.close();
  await redis.stop();
});

describe("Redis SIGKILL + restart on its AOF", () => {
  it("1,000 acknowledged enqueues across two Redis SIGKILLs: none lost, each run exactly once", async () => {
    // Default lock timing: a 1 s outage must not look like a dead worker.
    const env = s.env({ SANDCASTLE_BIN: TALLY_CHILD, SCQ_LOCK_DURATION_MS: "30000", SCQ_STALLED_INTERVAL_MS: "30000", LOG_LEVEL: "error" });
    const workers = [new CliProcess(["worker"], env), new CliProcess(["worker"], env)];
    for (const w of workers) await w.waitForOutput(/workers running/);

    // A producer that fails at once while Redis is down (nothing queued offline) and reconnects after.
    const producer = new Redis(redis.url, { maxRetriesPerRequest: 0, enableOfflineQueue: false, retryStrategy: () => 100 });
    producer.on("error", () => {});
    const queue = new Queue("sandcastle-run", { connection: producer, prefix: s.prefix });
    queue.on("error", () => {});
    const acknowledged: string[] = [];
    let refused = 0;
    const outages: Promise<void>[] = [];
    const outage = async () => {
      await redis.kill();
      await new Promise((r) => setTimeout(r, 1000));
      await redis.start();
    };
    try {
      // Four producers at once, so a kill lands while enqueues are in flight.
      await Promise.all(
        [0, 1, 2, 3].map(async () => {
          while (acknowledged.length < ACKNOWLEDGED) {
            if (outages.length < KILL_AT.length && acknowledged.length >= KILL_AT[outages.length]!) outages.push(outage());
            try {
              const { runId } = await enqueueRun(queue, s.request(), { envManifestDir: s.manifestDir });
              acknowledged.push(runId);
            } catch {
              refused += 1;
              await new Promise((r) => setTimeout(r, 50));
            }
          }
        }),
      );
      await Promise.all(outages);
    } finally {
      await queue.close();
      producer.disconnect();
    }
    expect(outages).toHaveLength(2);
    // Each outage refused enqueues: the kills really happened while producing.
    expect(refused).toBeGreaterThan(0);

    const ended = () => new Set(s.auditRows().filter((r) => TERMINAL.has(String(r.type))).map((r) => String(r.run_id)));
    const left = () => {
      const done = ended();
      return acknowledged.filter((id) => !done.has(id)).length;
    };
    await waitFor(() => left() === 0, 180_000, () => `every acknowledged run to end (${left()} left)`);

    const tally = s.tally();
    const rows = s.auditRows();
    const count = (type: string, id: string) => rows.filter((r) => r.type === type && r.run_id === id).length;
    const lost = acknowledged.filter((id) => tally.get(id) !== 1 || count("sandcastle_run_started", id) !== 1 || count("sandcastle_run_ok", id) !== 1);
    // On failure, say what became of each such run: its starts, its audit rows, its job's failure.
    const story = async (id: string) => ({
      id,
      starts: tally.get(id) ?? 0,
      audit: rows.filter((r) => r.run_id === id).map((r) => `${String(r.type)}/${String(r.failure_reason ?? "")}`),
      failed: (await s.queue.getJob(id))?.failedReason ?? null,
    });
    expect(await Promise.all(lost.map(story)), "acknowledged runs not run exactly once, ok").toEqual([]);
    // A run id the producer never saw acknowledged may have reached Redis; it too ran at most once.
    expect([...tally.values()].every((n) => n === 1)).toBe(true);
    // The workers rode out both outages.
    for (const w of workers) expect(w.child.exitCode).toBeNull();
  }, 300_000);
});
