// The embedded Redis: started, joined, adopted, persisted, and never left behind.
import { execFileSync, spawn } from "node:child_process";
import { existsSync, mkdirSync, readFileSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { afterEach, beforeEach, describe, expect, it } from "vitest";
import { StatusReport } from "../../../queues/status.js";
import { processAlive } from "../../../src/redis/process-alive.js";
import { CLI, CliProcess, cliEnv, lastJsonLine, runCli, stopAllCli, waitFor } from "../../helpers/cli.js";
import { embeddedServers, killEmbeddedServers } from "../../helpers/embedded-servers.js";
import { tempDir } from "../../helpers/scope.js";
import { startRedisServer, freePort } from "../../helpers/redis-server.js";

let dir: ReturnType<typeof tempDir>;
let env: NodeJS.ProcessEnv;

/** redis-server processes serving this test's socket. */
const serversFor = embeddedServers;

/** CLI processes whose env points at this data dir (found through /proc/<pid>/environ). */
function pgrepCli(dataDir: string): number[] {
  let pids: number[] = [];
  try {
    pids = execFileSync("pgrep", ["-f", "main.js start"], { encoding: "utf8" }).trim().split("\n").filter(Boolean).map(Number);
  } catch {
    return [];
  }
  return pids.filter((pid) => {
    try {
      return readFileSync(`/proc/${pid}/environ`, "utf8").includes(`SCQ_DATA_DIR=${dataDir}`);
    } catch {
      return false;
    }
  });
}

const serverPid = (dataDir: string) => Number(readFileSync(join(dataDir, "redis", "redis-server.pid"), "utf8").trim());

beforeEach(() => {
  dir = tempDir("scqe");
  env = cliEnv({ SCQ_DATA_DIR: join(dir.path, "d"), PORT: "0", ENV_MANIFEST_DIR: join(dir.path, "manifests") });
});

afterEach(async () => {
  await stopAllCli();
  killEmbeddedServers(join(dir.path, "d"));
  dir.remove();
});

describe("embedded Redis", () => {
  it("start brings up workers, Bull Board and one redis-server; status lists the three queues; SIGTERM stops all within 10 s", async () => {
    const dataDir = join(dir.path, "d");
    const start = new CliProcess(["start"], env);
    await start.waitForOutput(/Bull Board at http:\/\/127\.0\.0\.1:\d+\/admin\/queues/);
    expect(serversFor(dataDir)).toHaveLength(1);
    const redisPid = serverPid(dataDir);

    const status = await runCli(["status", "--json"], env);
    expect(status.code).toBe(0);
    const report = StatusReport.parse(lastJsonLine(status.stdout));
    expect(Object.keys(report.queues).sort()).toEqual(["margot-intent", "sandbox-retention", "sandcastle-run"]);
    expect(report.redis).toEqual({ url: `unix://${dataDir}/redis/redis.sock`, embedded: true });
    // The status process only joined: the server is still up and still single.
    expect(serversFor(dataDir)).toEqual([redisPid]);

    const t0 = Date.now();
    expect(await start.stop("SIGTERM", 10_000)).toBe(0);
    expect(Date.now() - t0).toBeLessThan(10_000);
    expect(processAlive(redisPid)).toBe(false);
    expect(serversFor(dataDir)).toEqual([]);
  });

  it("when the parent that spawned it with an IPC channel dies (a test run killed), start shuts down and leaves no redis-server", async () => {
    const dataDir = join(dir.path, "d");
    // A launcher that keeps no shell of its own (ADR 0046: only an IPC channel's parent stops the service by exiting).
    const launcher =
      `const c = require("node:child_process").spawn(process.execPath, [process.env.CLI, "start"], { stdio: ["ignore", "ignore", "ignore", "ipc"] }); ` +
      `c.channel.unref(); setInterval(() => {}, 1000);`;
    const wrapper = spawn(process.execPath, ["-e", launcher], { env: { ...env, CLI }, stdio: "ignore" });
    await waitFor(() => serversFor(dataDir).length === 1, 20_000, () => "the embedded Redis to start");
    const started = Date.now();
    wrapper.kill("SIGKILL");
    await waitFor(() => serversFor(dataDir).length === 0 && pgrepCli(dataDir).length === 0, 10_000, () => "start and its Redis to stop");
    expect(Date.now() - started).toBeLessThan(10_000);
  });

  it("two processes starting at once share one server", async () => {
    const dataDir = join(dir.path, "d");
    const a = new CliProcess(["worker"], env);
    const b = new CliProcess(["worker"], env);
    await a.waitForOutput(/workers running/);
    await b.waitForOutput(/workers running/);
    expect(serversFor(dataDir)).toHaveLength(1);
    const owner = Number(readFileSync(join(dataDir, "redis", "owner.pid"), "utf8"));
    const [first, second] = owner === a.pid ? [b, a] : [a, b];
    expect([a.pid, b.pid]).toContain(owner);
    expect(await first.stop()).toBe(0);
    expect(serversFor(dataDir)).toHaveLength(1);
    expect(await second.stop()).toBe(0);
    await waitFor(() => serversFor(dataDir).length === 0, 5000, () => "the owner to stop redis-server");
  });

  it("after its owner is killed, the next process adopts the server (never a second one) and stops it", async () => {
    const dataDir = join(dir.path, "d");
    const start = new CliProcess(["worker"], env);
    await start.waitForOutput(/workers running/);
    const redisPid = serverPid(dataDir);
    await start.stop("SIGKILL");
    expect(processAlive(redisPid)).toBe(true);

    const status = await runCli(["status", "--json"], env);
    expect(status.code).toBe(0);
    expect(StatusReport.parse(lastJsonLine(status.stdout)).redis.embedded).toBe(true);
    await waitFor(() => !processAlive(redisPid), 10_000, () => "the adopter to stop redis-server");
    expect(serversFor(dataDir)).toEqual([]);
  });

  it("a job enqueued with no worker survives a stop and a new start", async () => {
    const dataDir = join(dir.path, "d");
    mkdirSync(join(dir.path, "manifests"));
    writeFileSync(join(dir.path, "manifests", "m.json"), JSON.stringify({ project_slug: "p", vars: [] }));
    const request = {
      session_id: "s1",
      agent: "script",
      sandbox: "docker",
      prompt_template_dir: "/tmp/t",
      branch: "b1",
      repo_workdir: "/tmp/r",
      env_manifest_name: "m",
    };
    const enq = await runCli(["enqueue", "sandcastle-run", "--request", "-"], env, { input: JSON.stringify(request) });
    expect(enq.code, enq.stderr).toBe(0);
    const { job_id } = lastJsonLine(enq.stdout) as { job_id: string };
    // The enqueuer owned the server and stopped it on exit.
    expect(serversFor(dataDir)).toEqual([]);
    expect(existsSync(join(dataDir, "redis", "appendonlydir"))).toBe(true);

    const status = await runCli(["status", "--json"], env);
    expect(status.code, status.stderr).toBe(0);
    expect(StatusReport.parse(lastJsonLine(status.stdout)).queues["sandcastle-run"]?.waiting).toBe(1);
    expect(job_id).toMatch(/^run-/);
  });

  it("with neither REDIS_URL nor redis-server, exits 1 naming both fixes", async () => {
    const emptyPath = join(dir.path, "empty-bin");
    mkdirSync(emptyPath);
    const res = await runCli(["status"], { ...env, PATH: emptyPath });
    expect(res.code).toBe(1);
    expect(res.stderr).toMatch(/REDIS_URL is not set and redis-server is not on PATH/);
    expect(res.stderr).toMatch(/install redis-server/);
    expect(res.stderr).toMatch(/REDIS_URL=redis:\/\//);
  });
});

describe("Redis given by REDIS_URL", () => {
  it("refuses a Redis whose maxmemory-policy is not noeviction", async () => {
    const lru = await startRedisServer(["--maxmemory-policy", "allkeys-lru"]);
    try {
      const res = await runCli(["status"], { ...env, REDIS_URL: lru.url });
      expect(res.code).toBe(1);
      expect(res.stderr).toMatch(/maxmemory-policy "allkeys-lru".*evict.*noeviction/);
    } finally {
      await lru.stop();
    }
  });

  it("a producer fails fast with a clear error when Redis is down", async () => {
    const port = await freePort();
    const t0 = Date.now();
    const res = await runCli(["status", "--json"], { ...env, REDIS_URL: `redis://:pw-should-not-show@127.0.0.1:${port}` });
    expect(res.code).toBe(1);
    expect(res.stderr).toMatch(/cannot reach Redis at redis:\/\/:\*\*\*@127\.0\.0\.1/);
    expect(res.stderr).not.toContain("pw-should-not-show");
    expect(Date.now() - t0).toBeLessThan(15_000);
  });

  it("a bad setting stops the program with the variable's name", async () => {
    const res = await runCli(["status"], { ...env, MAX_CONCURRENT_SANDCASTLE_RUNS: "lots" });
    expect(res.code).toBe(1);
    expect(res.stderr).toMatch(/MAX_CONCURRENT_SANDCASTLE_RUNS: takes a whole number/);
  });
});
