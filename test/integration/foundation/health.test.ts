// `health [--worker] [--http]`, the check docker-compose.yml, the Dockerfile and a supervisor run: through real
// `worker` and `serve` processes on the shared test Redis, each under a key prefix of its own.
import { hostname } from "node:os";
import { Worker } from "bullmq";
import { Redis } from "ioredis";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { QUEUE_NAMES, workerName } from "../../../queues/index.js";
import { CliProcess, cliEnv, runCli, stopAllCli } from "../../helpers/cli.js";
import { freePort } from "../../helpers/redis-server.js";
import { deletePrefix, redisUrl, uniquePrefix } from "../../helpers/scope.js";

const withWorkers = uniquePrefix();
const elsewhere = uniquePrefix();
let port: number;
const env = (prefix: string) =>
  cliEnv({ REDIS_URL: redisUrl(), SCQ_KEY_PREFIX: prefix, PORT: String(port), HOST: "127.0.0.1", SCQ_API_TOKEN: "health-admin-token-0123456789" });

beforeAll(async () => {
  port = await freePort();
  const worker = new CliProcess(["worker"], env(withWorkers));
  await worker.waitForOutput(/workers running/);
});

afterAll(async () => {
  await stopAllCli();
  await deletePrefix(redisUrl(), withWorkers);
  await deletePrefix(redisUrl(), elsewhere);
});

describe("health", () => {
  it("--worker: healthy while this host's workers are connected to every queue", async () => {
    const res = await runCli(["health", "--worker"], env(withWorkers));
    expect(res.code, res.stderr).toBe(0);
    expect(res.stdout).toBe(`healthy: workers of ${hostname()} on ${QUEUE_NAMES.join(", ")}\n`);
  });

  it("--worker: another host's workers do not count; the queues without one of ours are named", async () => {
    // Workers of another host on every queue, as a second container on the same Redis would have.
    const connection = new Redis(redisUrl(), { maxRetriesPerRequest: null });
    const others = QUEUE_NAMES.map((name) => new Worker(name, async () => {}, { connection, prefix: elsewhere, name: workerName("another-host", 7) }));
    try {
      await Promise.all(others.map((w) => w.waitUntilReady()));
      const res = await runCli(["health", "--worker"], env(elsewhere));
      expect(res.code).toBe(1);
      expect(res.stdout).toBe("");
      expect(res.stderr).toBe(`sandcastle-queue: unhealthy: no worker of ${hostname()} is connected to ${QUEUE_NAMES.join(", ")}\n`);
    } finally {
      await Promise.all(others.map((w) => w.close()));
      connection.disconnect();
    }
  });

  it("--http: healthy while the server answers /healthz on its PORT; not once it has stopped", async () => {
    const serve = new CliProcess(["serve"], env(withWorkers));
    await serve.waitForOutput(/Bull Board at/);
    const up = await runCli(["health", "--http"], env(withWorkers));
    expect(up.code, up.stderr).toBe(0);
    expect(up.stdout).toBe(`healthy: http answers http://127.0.0.1:${port}/healthz\n`);
    // With no option it checks both, as `start` runs both.
    const both = await runCli(["health"], env(withWorkers));
    expect(both.code, both.stderr).toBe(0);
    await serve.stop();
    const down = await runCli(["health", "--http"], env(withWorkers));
    expect(down.code).toBe(1);
    expect(down.stderr).toMatch(new RegExp(`^sandcastle-queue: unhealthy: http: http://127\\.0\\.0\\.1:${port}/healthz did not answer \\(.*ECONNREFUSED.*\\)\\n$`));
  });

  it("no option: both, so a worker alone is unhealthy for want of its HTTP server", async () => {
    const res = await runCli(["health"], env(withWorkers));
    expect(res.code).toBe(1);
    expect(res.stderr).toMatch(/^sandcastle-queue: unhealthy: http: .* did not answer/);
    expect(res.stderr).not.toMatch(/no worker/);
  });
});
