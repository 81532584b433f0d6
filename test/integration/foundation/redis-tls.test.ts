// Redis over TLS, for real: a TLS-only redis-server at a rediss:// REDIS_URL, and a TLS-only 3-master Redis
// Cluster (REDIS_CLUSTER_TLS=1, the bus and replication on TLS too), both with a certificate from a throwaway
// private CA that the processes trust the way an operator would: NODE_EXTRA_CA_CERTS. Certificates are verified.
import { Redis } from "ioredis";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { StreamAppender } from "../../../src/redis/stream-appender.js";
import type { RedisTarget } from "../../../src/redis/target.js";
import { SandcastleRunResult } from "../../../src/sandcastle/contract.js";
import { sessionLogKey } from "../../../src/session-log/session-log.js";
import { CliProcess, lastJsonLine, runCli, stopAllCli } from "../../helpers/cli.js";
import type { RedisBackend } from "../../helpers/redis-backend.js";
import { TestCluster } from "../../helpers/redis-cluster.js";
import { startRedisServer, type TestRedis } from "../../helpers/redis-server.js";
import { RunScope } from "../../helpers/run-scope.js";
import { tempDir } from "../../helpers/scope.js";
import { makeTestCertificates, type TestCerts } from "../../helpers/tls-certs.js";

const certDir = tempDir("scq-tls");
let certs: TestCerts;
let server: TestRedis | undefined;
let cluster: TestCluster | undefined;

beforeAll(async () => {
  certs = makeTestCertificates(certDir.path);
  [server, cluster] = await Promise.all([startRedisServer([], undefined, certs), TestCluster.start({ size: 3, replicas: 0, tls: certs })]);
}, 90_000);
afterAll(async () => {
  await stopAllCli();
  await server?.stop();
  await cluster?.stop();
  certDir.remove();
});

/** What every command is checked on: a worker runs a dry run that `enqueue --wait` waits for, `logs` and `status` read it. */
async function runsOverTls(backend: RedisBackend, target: RedisTarget, described: string): Promise<void> {
  const s = new RunScope(backend);
  try {
    const worker = new CliProcess(["worker"], s.env());
    await worker.waitForOutput(/workers running/, 30_000);
    const request = s.request({}, { FAKE_MODE: "ok" });
    const enqueued = await runCli(["enqueue", "sandcastle-run", "--request", "-", "--wait"], s.env(), { input: JSON.stringify(request), timeoutMs: 60_000 });
    expect(enqueued.code, enqueued.stderr).toBe(0);
    expect(SandcastleRunResult.parse(lastJsonLine(enqueued.stdout)).status).toBe("ok");

    // The session log, run markers included, is written by the worker's own appender connection (src/redis/stream-appender.ts).
    const logs = await runCli(["logs", String(request.session_id)], s.env());
    expect(logs.code, logs.stderr).toBe(0);
    expect(logs.stdout).toBe("│ plain text line\n── run ok\n");

    const status = await runCli(["status", "--json"], s.env());
    expect(status.code, status.stderr).toBe(0);
    expect(lastJsonLine(status.stdout)).toMatchObject({ redis: { url: described }, queues: { "sandcastle-run": { completed: 1 } } });
    // No process warning on the way (Node's, e.g. for an IP address given as the TLS server name).
    expect(worker.stderr).not.toMatch(/^\(node:\d+\)/m);

    // The appender verifies the certificate too: this test process was not given the CA.
    const appender = new StreamAppender(target, 3000);
    try {
      await expect(appender.xadd(sessionLogKey(s.prefix, "untrusted"), 10, "lines", "never written")).rejects.toThrow(/^session log: cannot reach Redis at .*: self-signed certificate in certificate chain$/);
    } finally {
      appender.close();
    }
    expect(await s.redis.exists(sessionLogKey(s.prefix, "untrusted"))).toBe(0);

    // Without the CA the server's certificate is not trusted: a command refuses, in one line, saying so and what to do.
    const untrusted = await runCli(["status"], s.env({ NODE_EXTRA_CA_CERTS: undefined }));
    expect(untrusted.code).toBe(1);
    expect(untrusted.stderr.trim().split("\n")).toHaveLength(1);
    expect(untrusted.stderr).toMatch(/^sandcastle-queue: cannot reach Redis at \S+: its TLS certificate is not trusted \(self-signed certificate in certificate chain\)\. For a private CA, set NODE_EXTRA_CA_CERTS to the CA.s PEM file\.$/m);
    await worker.stop();
  } finally {
    await s.close();
  }
}

describe("Redis over TLS with a private CA in NODE_EXTRA_CA_CERTS", () => {
  it("REDIS_URL=rediss://: worker, enqueue --wait, logs (the appender's TLS connection) and status; an untrusted certificate is refused", async () => {
    const backend: RedisBackend = {
      env: { REDIS_URL: server!.url, NODE_EXTRA_CA_CERTS: certs.ca },
      client: () => new Redis(server!.url, { maxRetriesPerRequest: null, tls: { ca: certs.caPem() } }),
      deletePrefix: async () => {},
    };
    await runsOverTls(backend, { kind: "url", url: server!.url }, server!.url);
  });

  it("REDIS_CLUSTER_NODES with REDIS_CLUSTER_TLS=1: the same on a TLS-only cluster", async () => {
    await runsOverTls(cluster!.backend(), cluster!.target, `rediss-cluster://${cluster!.seeds}`);
  });
});
