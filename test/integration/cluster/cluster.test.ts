// Everything on a real Redis Cluster (3 masters + 3 replicas from redis-server --cluster-enabled):
// two worker processes as two hosts, `start` (workers + HTTP in one), every CLI command, the Lua scripts, session logs, Margot timers,
// the session-log appender following MOVED and ASK, and a master SIGKILLed mid-enqueue.
import { existsSync, readdirSync, readFileSync } from "node:fs";
import { join } from "node:path";
import { Cluster } from "ioredis";
import { afterAll, afterEach, beforeAll, describe, expect, it } from "vitest";
import { enqueueRun, openQueues, STALLED_REASON } from "../../../queues/index.js";
import { connectRedis, type RedisClient } from "../../../src/redis/connect.js";
import { StreamAppender } from "../../../src/redis/stream-appender.js";
import { SandcastleRunResult } from "../../../src/sandcastle/contract.js";
import { readSessionLog, sessionLogKey } from "../../../src/session-log/session-log.js";
import { displayLine } from "../../../src/session-log/service-lines.js";
import { CliProcess, lastJsonLine, runCli, stopAllCli, waitFor } from "../../helpers/cli.js";
import { ACTION_BODY, MargotScope } from "../../helpers/margot-scope.js";
import { TestCluster } from "../../helpers/redis-cluster.js";
import { RunScope } from "../../helpers/run-scope.js";
import { uniquePrefix } from "../../helpers/scope.js";

let cluster: TestCluster;
const scopes: Array<{ close(): Promise<void> }> = [];

beforeAll(async () => {
  cluster = await TestCluster.start();
}, 90_000);
afterEach(async () => {
  await stopAllCli();
  for (const s of scopes.splice(0)) await s.close();
});
afterAll(async () => {
  await cluster?.stop();
});

function runScope(): RunScope {
  const s = new RunScope(cluster.backend());
  scopes.push(s);
  return s;
}

async function worker(s: { env(extra?: Record<string, string>): NodeJS.ProcessEnv }, extra: Record<string, string> = {}): Promise<CliProcess> {
  const w = new CliProcess(["worker"], s.env(extra));
  await w.waitForOutput(/workers running on REDIS_CLUSTER_NODES/, 30_000);
  return w;
}

async function enqueue(s: RunScope, request: object): Promise<{ jobId: string; result: SandcastleRunResult | null; stderr: string }> {
  const res = await runCli(["enqueue", "sandcastle-run", "--request", "-", "--wait"], s.env(), { input: JSON.stringify(request), timeoutMs: 90_000 });
  const first = JSON.parse(res.stdout.trim().split("\n")[0] ?? "{}") as { job_id: string };
  const last = SandcastleRunResult.safeParse(lastJsonLine(res.stdout));
  return { jobId: first.job_id, result: last.success ? last.data : null, stderr: res.stderr };
}

const startedRun = (s: RunScope) => readdirSync(s.outDir).find((f) => f.startsWith("started-"))?.slice("started-".length);

describe("on a Redis Cluster", () => {
  it("two worker processes, 5 runs: never more than 3 children at once, each ok; logs, serve (SSE) and status read the cluster", async () => {
    const s = runScope();
    await Promise.all([worker(s), worker(s)]);
    const requests = [0, 1, 2, 3, 4].map(() => s.request({}, { FAKE_MODE: "hold", HOLD_MS: "1500" }));
    const outs = await Promise.all(requests.map((r) => enqueue(s, r)));
    expect(outs.map((o) => o.result?.status), outs.map((o) => o.stderr).join("\n")).toEqual(["ok", "ok", "ok", "ok", "ok"]);
    const spans = outs.map((o) => ({
      start: JSON.parse(readFileSync(s.started(o.jobId), "utf8")).t as number,
      end: Number(readFileSync(join(s.outDir, `ended-${o.jobId}`), "utf8")),
    }));
    const maxOverlap = Math.max(...spans.map((a) => spans.filter((b) => b.start <= a.start && a.start < b.end).length));
    expect(maxOverlap).toBeLessThanOrEqual(3);
    expect(maxOverlap).toBeGreaterThanOrEqual(2);

    // The session log, written by the appender on the slot's master, read back by `logs` through the cluster client.
    const logs = await runCli(["logs", String(requests[0]!.session_id)], s.env());
    expect(logs.code, logs.stderr).toBe(0);
    expect(logs.stdout).toMatch(/^── run ok/m);
    expect((await readSessionLog(s.redis, sessionLogKey(s.prefix, String(requests[0]!.session_id)))).map(displayLine)).toEqual(
      logs.stdout.trimEnd().split("\n"),
    );

    // `serve` on the cluster: ready, and a session's log over SSE (a blocking XREAD through the Cluster client).
    const serve = new CliProcess(["serve"], s.env({ PORT: "0" }));
    await serve.waitForOutput(/Bull Board at (http:\/\/\S+)\/admin\/queues/, 30_000);
    const base = /Bull Board at (http:\/\/\S+)\/admin\/queues/.exec(serve.stdout)![1]!;
    expect((await fetch(`${base}/readyz`)).status).toBe(200);
    const sse = await fetch(`${base}/v1/sessions/${String(requests[1]!.session_id)}/logs`);
    expect(sse.status).toBe(200);
    const events = await sse.text();
    expect(events).toContain("── run ok");
    expect(events).toMatch(/^event: end$/m);

    const status = await runCli(["status", "--json"], s.env());
    expect(status.code, status.stderr).toBe(0);
    expect(lastJsonLine(status.stdout)).toMatchObject({ redis: { url: `redis-cluster://${cluster.seeds}`, embedded: false }, queues: { "sandcastle-run": { completed: 5, active: 0 } } });
  });

  it("start (workers + HTTP in one process): /readyz answers, and a dry run POSTed to it runs to ok", async () => {
    const s = runScope();
    const service = new CliProcess(["start"], s.env({ PORT: "0" }));
    await service.waitForOutput(/workers \+ http running on REDIS_CLUSTER_NODES/, 30_000);
    await service.waitForOutput(/Bull Board at (http:\/\/\S+)\/admin\/queues/);
    const base = /Bull Board at (http:\/\/\S+)\/admin\/queues/.exec(service.stdout)![1]!;
    expect((await fetch(`${base}/readyz`)).status).toBe(200);
    const posted = await fetch(`${base}/v1/sandcastle-runs`, {
      method: "POST",
      headers: { "content-type": "application/json" },
      body: JSON.stringify(s.request({}, { FAKE_MODE: "ok" })),
    });
    expect(posted.status).toBe(201);
    const { job_id: jobId } = (await posted.json()) as { job_id: string };
    let job: { state: string; result: SandcastleRunResult | null } = { state: "", result: null };
    await waitFor(async () => {
      job = (await (await fetch(`${base}/v1/jobs/sandcastle-run/${jobId}`)).json()) as typeof job;
      return job.state === "completed" || job.state === "failed";
    }, 30_000, () => `the run to end (now ${job.state})`);
    expect(job.result).toMatchObject({ status: "ok", run_id: jobId });
    expect(existsSync(s.started(jobId))).toBe(true);
  });

  it("cancel and the kill switch from another process stop runs on whichever worker holds them", async () => {
    const s = runScope();
    await Promise.all([worker(s), worker(s)]);
    const cancelled = enqueue(s, s.request({}, { FAKE_MODE: "sleep" }));
    await waitFor(() => startedRun(s) !== undefined, 30_000, () => "the first run to start");
    const cancel = await runCli(["cancel", startedRun(s)!], s.env());
    expect(cancel.code, cancel.stderr).toBe(0);
    expect((await cancelled).result).toMatchObject({ status: "killed", failure_reason: "cancelled" });

    const killed = enqueue(s, s.request({}, { FAKE_MODE: "sleep" }));
    await waitFor(() => readdirSync(s.outDir).filter((f) => f.startsWith("started-")).length === 2, 30_000, () => "the second run to start");
    expect((await runCli(["killswitch", "on"], s.env())).code).toBe(0);
    expect((await killed).result).toMatchObject({ status: "killed", failure_reason: "kill_switch_mid_run" });
    expect((await enqueue(s, s.request({}, { FAKE_MODE: "ok" }))).result).toMatchObject({ status: "skipped", skip_reason: "kill_switch_active" });
    expect((await runCli(["killswitch", "off"], s.env())).code).toBe(0);
    expect((await enqueue(s, s.request({}, { FAKE_MODE: "ok" }))).result?.status).toBe("ok");
  });

  it("Margot across two workers: the rate-limit window holds at its max, and a draft's delayed expiry fires", async () => {
    const m = await new MargotScope(cluster.backend()).start();
    scopes.push(m);
    const env = m.env({ MARGOT_RATE_LIMIT_MAX: "2", MARGOT_RATE_WINDOW_SECONDS: "120", MARGOT_DRAFT_EXPIRY_SECONDS: "3" });
    await Promise.all([m.worker(env), m.worker(env)]);
    const results = await Promise.all([0, 1, 2].map(() => m.submit(m.completion(ACTION_BODY), 60_000)));
    expect(results.map((r) => r.status).sort()).toEqual(["drafted", "drafted", "queued_rate_limit"]);
    expect(m.telegram.drafts()).toHaveLength(2);
    const posted = results.find((r) => r.status === "drafted")!;
    const expired = await m.waitState(posted.draft_id!, "expired", 30_000);
    expect(expired.decided_by).toBe("timer");
    // Still two in the window: the queued draft waits for a slot, it is not posted by the expiry.
    expect(m.telegram.drafts()).toHaveLength(2);
  });

  it("the session-log appender follows MOVED after a failover and ASK during a slot migration", async () => {
    const prefix = uniquePrefix();
    const key = sessionLogKey(prefix, "s1");
    const reader = new Cluster([{ host: "127.0.0.1", port: cluster.servers[0]!.port }]);
    const appender = new StreamAppender(cluster.target);
    try {
      await appender.xadd(key, 100, "lines", "before");
      const oldMaster = await cluster.masterOf(key);
      const replica = await cluster.replicaOf(oldMaster);
      // A manual failover: the replica catches up first, so nothing is lost; the old master now answers MOVED.
      expect(await cluster.ask(replica, ["CLUSTER", "FAILOVER"])).toBe("OK");
      await waitFor(async () => (await cluster.masterOf(key)) === replica, 20_000, () => "the replica to take over");
      await appender.xadd(key, 100, "lines", "after failover");
      expect(await cluster.ask(replica, ["XLEN", key])).toBe(2);

      // ASK: the slot migrating to another master and this (new) key not yet on the source.
      const moving = sessionLogKey(prefix, "s2");
      const slot = String(await cluster.ask(replica, ["CLUSTER", "KEYSLOT", moving]));
      const source = await cluster.masterOf(moving);
      const dest = (await cluster.masters()).find((p) => p !== source)!;
      const id = (port: number) => cluster.ask(port, ["CLUSTER", "MYID"]) as Promise<string>;
      expect(await cluster.ask(dest, ["CLUSTER", "SETSLOT", slot, "IMPORTING", await id(source)])).toBe("OK");
      expect(await cluster.ask(source, ["CLUSTER", "SETSLOT", slot, "MIGRATING", await id(dest)])).toBe("OK");
      await appender.xadd(moving, 100, "lines", "during migration");
      for (const port of await cluster.masters()) await cluster.ask(port, ["CLUSTER", "SETSLOT", slot, "NODE", await id(dest)]);
      await waitFor(async () => (await cluster.masterOf(moving)) === dest, 10_000, () => "the slot to settle on its new master");
      // Written where the slot was going (after ASKING), so it is there once the slot has moved.
      expect(await reader.xlen(moving)).toBe(1);
    } finally {
      appender.close();
      reader.disconnect();
    }
  });

  it("a master SIGKILLed mid-enqueue and restarted on its AOF: every acknowledged enqueue is there, and workers carry on", async () => {
    const s = runScope();
    await worker(s, { TAO_SANDCASTLE_ENABLED: "0" });
    const master = await cluster.masterOf(`${s.prefix}:x`);
    const replica = await cluster.replicaOf(master);
    // Without a failover the slot waits for its master: what the master acknowledged is on its AOF (appendfsync always).
    await cluster.ask(replica, ["CONFIG", "SET", "cluster-replica-no-failover", "yes"]);
    let producer: RedisClient | null = null;
    const acknowledged: string[] = [];
    let killed = false;
    const deadline = Date.now() + 60_000;
    try {
      while (acknowledged.length < 300 && Date.now() < deadline) {
        if (acknowledged.length === 100 && !killed) {
          killed = true;
          await cluster.kill(master);
          setTimeout(() => void cluster.launch(cluster.server(master)), 1500).unref();
        }
        try {
          producer ??= await connectRedis(cluster.target, "producer", 3000);
          const queues = openQueues(producer, s.prefix);
          const { runId } = await enqueueRun(queues.sandcastleRun, s.request(), { envManifestDir: s.manifestDir }).finally(() => queues.close());
          acknowledged.push(runId);
        } catch {
          // Not acknowledged (the producer gave up waiting for the slot): a caller sees the error and may retry.
          producer?.disconnect();
          producer = null;
          await new Promise((r) => setTimeout(r, 100));
        }
      }
    } finally {
      producer?.disconnect();
      await cluster.ask(replica, ["CONFIG", "SET", "cluster-replica-no-failover", "no"]);
    }
    expect(acknowledged).toHaveLength(300);
    await cluster.waitHealthy(30_000);
    const missing: string[] = [];
    for (const id of acknowledged) if (!(await s.queue.getJob(id))) missing.push(id);
    expect(missing).toEqual([]);
    // The worker rode out the outage: every run is processed (skipped: sandcastle disabled), none twice.
    await waitFor(async () => {
      const c = await s.queue.getJobCounts("completed", "failed");
      return (c.completed ?? 0) + (c.failed ?? 0) >= 300;
    }, 60_000, () => "every run to be processed");
    // Each at most once: skipped (sandcastle disabled); one active when its master died may have lost its lock and
    // failed as stalled (worker_lost), never re-run (ADR 0003).
    const lost = (await s.queue.getFailed()).filter((j) => j.failedReason === STALLED_REASON).map((j) => String(j.id));
    const skips = s.auditRows().filter((r) => r.type === "sandcastle_run_skipped").map((r) => String(r.run_id));
    expect(new Set(skips).size).toBe(skips.length);
    expect(lost.length).toBeLessThanOrEqual(3);
    expect([...new Set([...skips, ...lost])].sort()).toEqual([...acknowledged].sort());
  });

  // Last: it leaves the cluster requiring a password.
  it("REDIS_CLUSTER_PASSWORD: commands and the appender authenticate; a wrong one is refused without echoing it", async () => {
    const password = "cluster-secret-pass-0123";
    for (const server of cluster.servers) {
      expect(await cluster.ask(server.port, ["CONFIG", "SET", "masterauth", password])).toBe("OK");
      expect(await cluster.ask(server.port, ["CONFIG", "SET", "requirepass", password])).toBe("OK");
    }
    const s = runScope();
    const ok = await runCli(["status", "--json"], s.env({ REDIS_CLUSTER_PASSWORD: password }));
    expect(ok.code, ok.stderr).toBe(0);
    const wrong = await runCli(["status"], s.env({ REDIS_CLUSTER_PASSWORD: "not-the-password-at-all" }));
    expect(wrong.code).toBe(1);
    expect(wrong.stderr).toMatch(/^sandcastle-queue: Redis at redis-cluster:\/\/\S+ refused the credentials .*: correct REDIS_CLUSTER_PASSWORD/);
    expect(wrong.stderr).not.toContain("not-the-password-at-all");
    const none = await runCli(["status"], s.env());
    expect(none.code).toBe(1);

    expect(ok.stdout).not.toContain(password);
    const appender = new StreamAppender({ ...cluster.target, password });
    const reader = new Cluster([{ host: "127.0.0.1", port: cluster.servers[0]!.port }], { redisOptions: { password } });
    try {
      const key = sessionLogKey(s.prefix, "auth");
      await appender.xadd(key, 10, "lines", "with a password");
      expect(await reader.xlen(key)).toBe(1);
    } finally {
      appender.close();
      reader.disconnect();
    }
  });
});
