// Fault: Redis is down when a producer enqueues. Guarantee: a clear error naming Redis within seconds,
// and no job, or part of one, appears in Redis when it comes back.
import { Redis } from "ioredis";
import { afterEach, beforeEach, describe, expect, it } from "vitest";
import { CliProcess, runCli, stopAllCli, waitFor } from "../../helpers/cli.js";
import { DurableRedis } from "../../helpers/durable-redis.js";
import { RunScope } from "../../helpers/run-scope.js";
import { redisAt } from "../../helpers/scope.js";

const TOKEN = "redis-down-token-0123456789abcdef";

let redis: DurableRedis;
let s: RunScope;
beforeEach(async () => {
  redis = await new DurableRedis().start();
  s = new RunScope(redisAt(redis.url));
  s.redis.on("error", () => {});
  s.queue.on("error", () => {});
});
afterEach(async () => {
  await stopAllCli();
  await redis.start().catch(() => {});
  await s.close();
  await redis.stop();
});

/** Every key of this deployment, sorted (an enqueue that failed must have added none). */
async function keys(): Promise<string[]> {
  const probe = new Redis(redis.url);
  try {
    return (await probe.keys(`${s.prefix}*`)).sort();
  } finally {
    probe.disconnect();
  }
}

describe("Redis down at enqueue", () => {
  it("the CLI (both queues) fails within seconds with one line naming Redis; nothing is stored", async () => {
    // The scope's own Queue writes its meta key once connected: after that, not while Redis is down.
    await waitFor(async () => (await keys()).includes(`${s.prefix}:sandcastle-run:meta`), 5000, () => "the scope's queue to write its meta");
    const before = await keys();
    await redis.kill();
    const t0 = Date.now();
    const run = await runCli(["enqueue", "sandcastle-run", "--request", "-"], s.env(), { input: JSON.stringify(s.request()) });
    expect(Date.now() - t0).toBeLessThan(10_000);
    expect(run.code).toBe(1);
    expect(run.stdout).toBe("");
    expect(run.stderr.trim().split("\n")).toEqual([expect.stringMatching(/^sandcastle-queue: cannot reach Redis at redis:\/\/127\.0\.0\.1:\d+\/?: .*Start Redis/)]);
    const intent = await runCli(["enqueue", "margot-intent", "--completion", "-"], s.env(), {
      input: JSON.stringify({ interaction_id: "int-down-1", body: "text", originated_at: "2026-09-17T03:04:05Z", originating_session_id: "s" }),
    });
    expect(intent.code).toBe(1);
    expect(intent.stderr).toMatch(/^sandcastle-queue: cannot reach Redis/);
    await redis.start();
    expect(await keys()).toEqual(before);
  });

  it("the HTTP API answers 503 naming Redis within seconds, and enqueues nothing when Redis returns", async () => {
    const service = new CliProcess(["serve"], s.env({ PORT: "0", SCQ_API_TOKEN: TOKEN }));
    await service.waitForOutput(/Bull Board at (http:\/\/\S+)\/admin\/queues/);
    const base = /Bull Board at (http:\/\/\S+)\/admin\/queues/.exec(service.stdout)![1]!;
    const before = await keys();
    await redis.kill();
    const t0 = Date.now();
    const res = await fetch(`${base}/v1/sandcastle-runs`, {
      method: "POST",
      headers: { authorization: `Bearer ${TOKEN}`, "content-type": "application/json" },
      body: JSON.stringify(s.request()),
      signal: AbortSignal.timeout(20_000),
    });
    const elapsed = Date.now() - t0;
    const body = (await res.json()) as { error: string; message: string };
    expect({ status: res.status, error: body.error }).toEqual({ status: 503, error: "redis_unavailable" });
    expect(body.message).toMatch(/Redis/);
    expect(elapsed).toBeLessThan(5000);
    // The request must not linger in a client's offline queue and land once Redis is back.
    await redis.start();
    await new Promise((r) => setTimeout(r, 2000));
    expect(await keys()).toEqual(before);
    expect(await s.queue.getJobCounts("waiting", "active", "delayed", "completed", "failed")).toEqual({
      waiting: 0,
      active: 0,
      delayed: 0,
      completed: 0,
      failed: 0,
    });
    // And the same server takes the request now that Redis is back.
    const again = await fetch(`${base}/v1/sandcastle-runs`, {
      method: "POST",
      headers: { authorization: `Bearer ${TOKEN}`, "content-type": "application/json" },
      body: JSON.stringify(s.request()),
    });
    expect(again.status).toBe(201);
    expect(service.child.exitCode).toBeNull();
  });
});
