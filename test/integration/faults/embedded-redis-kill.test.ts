// Fault: the embedded redis-server is SIGKILLed under a running `sandcastle-queue start`.
// Guarantee: the service starts it again on its AOF, says so in one line, and keeps working with the state it
// had; no CLI command starts a second Redis under the live service; a Redis that keeps dying stops the service
// with one line and exit 1 (ADR 0041).
import { readFileSync } from "node:fs";
import { join } from "node:path";
import { afterEach, beforeEach, describe, expect, it } from "vitest";
import { processAlive } from "../../../src/redis/process-alive.js";
import { CliProcess, cliEnv, lastJsonLine, runCli, stopAllCli, waitFor } from "../../helpers/cli.js";
import { embeddedServers, killEmbeddedServers } from "../../helpers/embedded-servers.js";
import { tempDir } from "../../helpers/scope.js";

let dir: ReturnType<typeof tempDir>;
let dataDir: string;
let env: NodeJS.ProcessEnv;

/** redis-server processes serving this test's socket. */
const servers = () => embeddedServers(dataDir);

const serverPid = () => Number(readFileSync(join(dataDir, "redis", "redis-server.pid"), "utf8").trim());

/** SIGKILL the server and wait for the service to say it started another (restart `n`); returns both pids. */
async function killAndWaitForAnother(service: CliProcess, n: number): Promise<{ dead: number; pid: number }> {
  const dead = serverPid();
  process.kill(dead, "SIGKILL");
  const said = new RegExp(`the embedded Redis \\(pid ${dead}\\) died; started it again on its AOF as pid (\\d+) \\(restart ${n} of at most 5 within 10 min\\)`);
  await waitFor(() => said.test(service.stderr), 15_000, () => `restart ${n} of ${dead} to be reported\n${service.stderr}`);
  return { dead, pid: Number(said.exec(service.stderr)![1]) };
}

async function startService(): Promise<{ service: CliProcess; base: string }> {
  const service = new CliProcess(["start"], env);
  await service.waitForOutput(/Bull Board at (http:\/\/\S+)\/admin\/queues/);
  await service.waitForOutput(/workers \+ http running/);
  return { service, base: /Bull Board at (http:\/\/\S+)\/admin\/queues/.exec(service.stdout)![1]! };
}

beforeEach(() => {
  dir = tempDir("scqk");
  dataDir = join(dir.path, "d");
  env = cliEnv({ SCQ_DATA_DIR: dataDir, PORT: "0", ENV_MANIFEST_DIR: join(dir.path, "manifests"), SCQ_SHUTDOWN_GRACE_SECONDS: "2" });
});

afterEach(async () => {
  await stopAllCli();
  killEmbeddedServers(dataDir);
  dir.remove();
});

describe("embedded Redis SIGKILLed under start", () => {
  it("is started again on its AOF: one line says so, the state is kept, the workers and the API carry on", async () => {
    const { service, base } = await startService();
    const on = await runCli(["killswitch", "on"], env);
    expect(on.code, on.stderr).toBe(0);

    const { dead, pid } = await killAndWaitForAnother(service, 1);
    expect(processAlive(dead)).toBe(false);
    expect(servers()).toEqual([pid]);
    expect(service.stderr.match(/died; started it again/g)).toHaveLength(1);
    expect(service.child.exitCode).toBeNull();

    // What Redis acknowledged before the kill is there after (appendfsync always).
    const status = await runCli(["killswitch", "status"], env);
    expect(status.code, status.stderr).toBe(0);
    expect(lastJsonLine(status.stdout)).toMatchObject({ active: true });
    await waitFor(async () => (await fetch(`${base}/readyz`)).status === 200, 10_000, () => "/readyz to answer 200");
    // The same workers take new work: a completion enqueued now is decided.
    expect((await runCli(["killswitch", "off"], env)).code).toBe(0);
    const completion = {
      interaction_id: `after-kill-${Date.now()}`,
      body: "What's new in Next.js 15? Nothing affects us.",
      originated_at: "2026-09-17T03:04:05Z",
      originating_session_id: "s1",
    };
    const enq = await runCli(["enqueue", "margot-intent", "--completion", "-", "--wait", "--wait-timeout", "30"], env, {
      input: JSON.stringify(completion),
      timeoutMs: 45_000,
    });
    expect(enq.code, enq.stderr).toBe(0);
    expect(lastJsonLine(enq.stdout)).toMatchObject({ interaction_id: completion.interaction_id, status: "informational" });
    expect(servers()).toEqual([pid]);
    expect(await service.stop()).toBe(0);
    expect(servers()).toEqual([]);
  });

  it("while the service cannot start it again, a CLI command starts no second Redis; the service does once it runs", async () => {
    const { service } = await startService();
    // Frozen, the service's watch cannot act: what a CLI command then finds is a dead Redis and a live owner.
    process.kill(service.pid, "SIGSTOP");
    try {
      process.kill(serverPid(), "SIGKILL");
      await waitFor(() => servers().length === 0, 5000, () => "the server to die");
      const status = await runCli(["status", "--json"], env, { timeoutMs: 40_000 });
      expect(status.code).toBe(1);
      expect(status.stderr.trim().split("\n")).toHaveLength(1);
      expect(status.stderr).toMatch(new RegExp(`does not answer and its owner, pid ${service.pid}, is alive .*no second one is started`));
      expect(servers()).toEqual([]);
    } finally {
      process.kill(service.pid, "SIGCONT");
    }
    await waitFor(() => servers().length === 1, 15_000, () => "the service to start its Redis again");
    const status = await runCli(["status", "--json"], env);
    expect(status.code, status.stderr).toBe(0);
    expect(servers()).toHaveLength(1);
  });

  it("a Redis that keeps dying (a 6th time within 10 min) stops the service: one line, exit 1, no redis-server left", async () => {
    const { service } = await startService();
    for (let n = 1; n <= 5; n++) await killAndWaitForAnother(service, n);
    process.kill(serverPid(), "SIGKILL");
    const code = await Promise.race([service.waitExit(), new Promise<"running">((r) => setTimeout(() => r("running"), 30_000))]);
    expect(code).toBe(1);
    expect(service.stderr).toContain("the embedded Redis died 6 times within 10 min; not starting it again");
    // One line for the operator (the JSON log has its own record of it).
    expect(service.stderr.split("\n").filter((l) => l.startsWith("sandcastle-queue: ") && l.includes("not starting it again"))).toHaveLength(1);
    expect(servers()).toEqual([]);
  });
});
