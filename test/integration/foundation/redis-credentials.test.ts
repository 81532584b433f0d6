// A Redis that refuses the credentials is said to refuse them — not "cannot reach Redis … Start Redis": the built
// CLI as a real process against real redis-servers (one, and a 3-master cluster) that require a password.
import { Redis } from "ioredis";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { CliProcess, cliEnv, runCli, stopAllCli } from "../../helpers/cli.js";
import { TestCluster } from "../../helpers/redis-cluster.js";
import { startRedisServer, type TestRedis } from "../../helpers/redis-server.js";
import { tempDir } from "../../helpers/scope.js";

const PASSWORD = "right-horse-battery-7341";
const WRONG = "wrong-staple-2209";
let server: TestRedis;
let hostPort: string;
const dir = tempDir("scq-cred");

beforeAll(async () => {
  server = await startRedisServer();
  hostPort = new URL(server.url).host;
  const admin = new Redis(server.url);
  await admin.call("ACL", "SETUSER", "bob", "on", `>${PASSWORD}`, "~*", "&*", "+@all");
  await admin.config("SET", "requirepass", PASSWORD);
  admin.disconnect();
});
afterAll(async () => {
  await stopAllCli();
  await server?.stop();
  dir.remove();
});

const env = (url: string) => cliEnv({ REDIS_URL: url, SCQ_DATA_DIR: dir.path });

describe("a Redis that wants a password", () => {
  it("a wrong password (default user or an ACL user) is refused credentials in one line naming REDIS_URL, never the password, not 'cannot reach'", async () => {
    for (const url of [`redis://:${WRONG}@${hostPort}`, `redis://bob:${WRONG}@${hostPort}`]) {
      const res = await runCli(["status"], env(url));
      expect(res.code).toBe(1);
      const masked = url.startsWith("redis://bob") ? `redis://bob:***@${hostPort}` : `redis://:***@${hostPort}`;
      expect(res.stderr).toBe(
        `sandcastle-queue: Redis at ${masked} refused the credentials (a wrong password or user name, or a disabled user): correct them in REDIS_URL (redis://USER:PASSWORD@host:port, or redis://:PASSWORD@host:port for the default user)\n`,
      );
      expect(res.stderr).not.toContain(WRONG);
      expect(res.stderr).not.toMatch(/cannot reach|Start Redis/);
    }
  });

  it("no password at all says one is needed and where it goes", async () => {
    const res = await runCli(["killswitch", "status"], env(`redis://${hostPort}`));
    expect(res.code).toBe(1);
    expect(res.stderr).toBe(`sandcastle-queue: Redis at redis://${hostPort} needs a password and none was given: put it in REDIS_URL as redis://:PASSWORD@host:port (redis://USER:PASSWORD@host:port for an ACL user)\n`);
  });

  it("a producer (enqueue) and a service (worker), whose connections retry, are refused just as fast", async () => {
    const url = `redis://:${WRONG}@${hostPort}`;
    const started = Date.now();
    const enqueue = await runCli(["enqueue", "margot-intent", "--completion", "-"], env(url), { input: "{}" });
    expect(enqueue.code).toBe(1);
    expect(enqueue.stderr).toMatch(/^sandcastle-queue: Redis at redis:\/\/:\*\*\*@\S+ refused the credentials/);
    const worker = new CliProcess(["worker"], env(url));
    expect(await worker.waitExit()).toBe(1);
    expect(worker.stderr).toMatch(/^sandcastle-queue: Redis at redis:\/\/:\*\*\*@\S+ refused the credentials .*\n$/);
    // Well under the 5 s connect bound: the refusal is heard, not waited out.
    expect(Date.now() - started).toBeLessThan(8000);
  });

  it("the right password works (the same server, the same command)", async () => {
    const res = await runCli(["status"], env(`redis://:${PASSWORD}@${hostPort}`));
    expect(res.code, res.stderr).toBe(0);
    expect(res.stdout).toContain(`redis: redis://:***@${hostPort}`);
  });
});

describe("a Redis Cluster that wants a password", () => {
  let cluster: TestCluster;
  beforeAll(async () => {
    cluster = await TestCluster.start({ size: 3, replicas: 0 });
    for (const s of cluster.servers) {
      const node = new Redis({ host: "127.0.0.1", port: s.port });
      await node.config("SET", "requirepass", PASSWORD);
      node.disconnect();
    }
  }, 60_000);
  afterAll(async () => {
    await cluster?.stop();
  });

  it("a wrong or missing password names REDIS_CLUSTER_PASSWORD; the right one works", async () => {
    const clusterEnv = (password?: string) => cliEnv({ REDIS_CLUSTER_NODES: cluster.seeds, REDIS_CLUSTER_PASSWORD: password, SCQ_DATA_DIR: dir.path });
    const wrong = await runCli(["status"], clusterEnv(WRONG));
    expect(wrong.code).toBe(1);
    expect(wrong.stderr).toBe(
      `sandcastle-queue: Redis at redis-cluster://${cluster.seeds} refused the credentials (a wrong password or user name, or a disabled user): correct REDIS_CLUSTER_PASSWORD (and REDIS_CLUSTER_USERNAME)\n`,
    );
    const missing = await runCli(["status"], clusterEnv());
    expect(missing.code).toBe(1);
    expect(missing.stderr).toBe(`sandcastle-queue: Redis at redis-cluster://${cluster.seeds} needs a password and none was given: set REDIS_CLUSTER_PASSWORD (and REDIS_CLUSTER_USERNAME for an ACL user)\n`);
    const right = await runCli(["status"], clusterEnv(PASSWORD));
    expect(right.code, right.stderr).toBe(0);
  });
});
