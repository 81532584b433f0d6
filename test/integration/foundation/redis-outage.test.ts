// Redis goes away for 10 s while workers and the HTTP server run: readiness says so, and work resumes after.
import { Queue } from "bullmq";
import { Redis } from "ioredis";
import { afterEach, describe, expect, it } from "vitest";
import { enqueueRun } from "../../../queues/index.js";
import { CliProcess, stopAllCli, waitFor } from "../../helpers/cli.js";
import { DurableRedis } from "../../helpers/durable-redis.js";
import { RunScope } from "../../helpers/run-scope.js";

const TOKEN = "outage-token-0123456789abcdef";
let redis: DurableRedis | null = null;
let scope: RunScope | null = null;

afterEach(async () => {
  await stopAllCli();
  await redis?.stop();
  await scope?.close();
});

describe("a Redis outage", () => {
  it("readyz fails while Redis is down 10 s; afterwards the worker takes new jobs again", async () => {
    redis = await new DurableRedis().start();
    const url = redis.url;
    scope = new RunScope();
    const s = scope;
    const service = new CliProcess(["start"], s.env({ REDIS_URL: url, PORT: "0", SCQ_API_TOKEN: TOKEN }));
    await service.waitForOutput(/Bull Board at (http:\/\/\S+)\/admin\/queues/);
    const base = /Bull Board at (http:\/\/\S+)\/admin\/queues/.exec(service.stdout)![1]!;
    const ready = async () => (await fetch(`${base}/readyz`, { headers: { authorization: `Bearer ${TOKEN}` } })).status;

    const producer = new Redis(url, { maxRetriesPerRequest: null });
    producer.on("error", () => {});
    const queue = new Queue("sandcastle-run", { connection: producer, prefix: s.prefix });
    // The outage is the point: connection errors are expected, not news.
    queue.on("error", () => {});
    const runOne = async () => {
      const { runId } = await enqueueRun(queue, s.request({}, { FAKE_MODE: "ok" }), { envManifestDir: s.manifestDir });
      await waitFor(async () => (await queue.getJob(runId).then((j) => j?.getState())) === "completed", 30_000, () => `run ${runId} to complete`);
      return (await queue.getJob(runId))!.returnvalue as { status: string };
    };
    try {
      expect(await ready()).toBe(200);
      expect((await runOne()).status).toBe("ok");

      await redis.kill();
      await waitFor(async () => (await ready()) === 503, 10_000, () => "readyz to fail");
      await new Promise((r) => setTimeout(r, 10_000));
      expect(await ready()).toBe(503);

      await redis.start();
      await waitFor(async () => (await ready()) === 200, 20_000, () => "readyz to recover");
      expect((await runOne()).status).toBe("ok");
    } finally {
      await queue.close();
      producer.disconnect();
    }
    expect(await service.stop()).toBe(0);
  });
});
