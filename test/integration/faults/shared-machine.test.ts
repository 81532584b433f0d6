// Fault: two deployments on one machine share SANDCASTLE_CONFIG_DIR and RUNS_DIR — another key prefix on the same
// Redis (the README's own recipe for several deployments), and another Redis. Deployment A has a long podman run
// going (its run directory with the config, its agent's repository in RUNS_DIR/<run>/agent/) and a retained
// workspace. Deployment B starts workers with SANDBOX_RETENTION_HOURS=0, loses a run of its own (worker SIGKILLed,
// the next worker declares it lost and sweeps), and gets a reap job for A's run (as an older version's sweep made).
// Guarantee: nothing of A's is touched — its run goes on and ends ok with its whole log retained, its retained
// workspace stays with its reap job in A's queue, B schedules no reap for A's runs, and B's CLI neither lists nor
// pins them (ADR 0044).
import { existsSync, readFileSync, writeFileSync, mkdirSync } from "node:fs";
import { join, resolve } from "node:path";
import { Queue } from "bullmq";
import { afterEach, beforeEach, describe, expect, it } from "vitest";
import { enqueueRun, reapDueAt, reapJobId, SANDBOX_RETENTION_QUEUE } from "../../../queues/index.js";
import { SandcastleRunResult } from "../../../src/sandcastle/contract.js";
import { CliProcess, lastJsonLine, runCli, stopAllCli, waitFor } from "../../helpers/cli.js";
import { ContainerRuns } from "../../helpers/container-runs.js";
import { engineEnv, skipContainers } from "../../helpers/containers.js";
import { startRedisServer, type TestRedis } from "../../helpers/redis-server.js";
import { makeGitRepo, RunScope } from "../../helpers/run-scope.js";
import { redisAt } from "../../helpers/scope.js";

const HELD = resolve(import.meta.dirname, "../../fixtures/sandcastle/container-commit");
const KEPT = resolve(import.meta.dirname, "../../fixtures/sandcastle/leave-uncommitted");

let a: ContainerRuns;
let others: RunScope[] = [];
let otherRedis: TestRedis | null = null;
beforeEach(() => {
  a = new ContainerRuns();
  a.handRepoToAgentUser();
});
afterEach(async () => {
  await stopAllCli();
  for (const b of others.splice(0)) await b.close();
  await otherRedis?.stop();
  otherRedis = null;
  await a.close();
});

describe.skipIf(skipContainers)("two deployments sharing SANDCASTLE_CONFIG_DIR and RUNS_DIR", { timeout: 420_000 }, () => {
  it("A's live run and retained workspace survive B's start, sweeps, worker_lost handling, retention off and reap job; B never schedules a reap for A's runs", async () => {
    await a.startWorker();
    // A retained workspace of A's: a finished dry run in a repository of the worker's own user.
    const keptRepo = join(a.s.dir.path, "kept-repo");
    makeGitRepo(keptRepo);
    const keptRun = await runCli(["enqueue", "sandcastle-run", "--request", "-", "--wait"], a.env(), {
      input: JSON.stringify(a.s.request({ prompt_template_dir: KEPT, repo_workdir: keptRepo, branch: "agent/kept" })),
      timeoutMs: 120_000,
    });
    expect(keptRun.code, keptRun.stderr).toBe(0);
    const kept = SandcastleRunResult.parse(lastJsonLine(keptRun.stdout));
    const keptDir = join(a.s.runsDir, kept.run_id);
    await a.s.kept(kept.run_id);
    expect(existsSync(join(keptDir, "retained.json"))).toBe(true);

    // A's long run, held by its agent inside its container.
    const queued = await runCli(["enqueue", "sandcastle-run", "--request", "-"], a.env(), {
      input: JSON.stringify(a.request(HELD, { branch: "agent/long", timeout_minutes: 15 }, { HOLD: "1" })),
    });
    const longId = (JSON.parse(queued.stdout.trim().split("\n")[0]!) as { job_id: string }).job_id;
    await waitFor(
      () => a.heldAgentRepo() !== undefined,
      150_000,
      () => "A's agent to start in its container",
    );
    const agentRepo = a.heldAgentRepo()!;
    const aFiles = [
      join(a.runDir(longId), "config.json"),
      join(a.runDir(longId), `${longId}.env`),
      join(agentRepo, ".scq-ready"),
      join(a.s.runsDir, longId, "job", "session.log"),
      join(keptDir, "retained.json"),
      join(keptDir, "workspace", "done.txt"),
      join(keptDir, "job", "session.log"),
    ];
    const missing = () => aFiles.filter((f) => !existsSync(f));
    await waitFor(
      () => missing().length === 0,
      30_000,
      () => `A's files: missing ${missing().join(", ")}`,
    );

    otherRedis = await startRedisServer();
    const neighbours = [new RunScope(), new RunScope(redisAt(otherRedis.url))];
    others.push(...neighbours);
    for (const b of neighbours) {
      const what = `B (${b.deployment})`;
      const env = b.env({ SANDCASTLE_CONFIG_DIR: a.s.configDir, RUNS_DIR: a.s.runsDir, SANDBOX_RETENTION_HOURS: "0", ...engineEnv() });
      // B's start: its sweeps of run directories, retained workspaces (retention off: all of its own) and containers.
      const first = new CliProcess(["worker"], env);
      await first.waitForOutput(/workers running/, 60_000);
      expect(missing(), `after ${what} started`).toEqual([]);

      // A run of B's is lost: its worker SIGKILLed, its child's group too; the next worker of B declares it lost and sweeps.
      const { runId: lostId } = await enqueueRun(b.queue, b.request({}, { FAKE_MODE: "sleep" }), { envManifestDir: b.manifestDir });
      await waitFor(
        () => existsSync(b.started(lostId)),
        30_000,
        () => `${what}'s run to start`,
      );
      const child = (JSON.parse(readFileSync(b.started(lostId), "utf8")) as { pid: number }).pid;
      process.kill(-child, "SIGKILL");
      await first.stop("SIGKILL");
      const second = new CliProcess(["worker"], env);
      await second.waitForOutput(/workers running/, 60_000);
      // Made after the start's sweep: what B's worker_lost sweep removes, so its end can be seen.
      const deadOfB = join(a.s.configDir, "scq-run-run-00000000-0000-4000-8000-0000000000bb");
      mkdirSync(deadOfB, { mode: 0o700 });
      writeFileSync(join(deadOfB, "deployment"), `${b.deployment}\n`);
      await waitFor(
        async () => (await (await b.queue.getJob(lostId))!.getState()) === "failed",
        60_000,
        () => `${what}'s run to be declared lost`,
      );
      await waitFor(
        () => !existsSync(deadOfB),
        20_000,
        () => `${what}'s worker_lost sweep`,
      );
      expect(missing(), `after ${what}'s worker_lost handling`).toEqual([]);

      // A reap job for A's workspace in B's queue (an older version's sweep made such jobs): it removes nothing.
      const bRetention = new Queue(SANDBOX_RETENTION_QUEUE, { connection: b.redis, prefix: b.prefix });
      try {
        await bRetention.add("reap", { run_id: kept.run_id }, { jobId: reapJobId(kept.run_id) });
        const job = await bRetention.getJob(reapJobId(kept.run_id));
        await waitFor(
          async () => (await job!.getState()) === "completed",
          30_000,
          () => `${what}'s reap job`,
        );
        expect((await bRetention.getJob(reapJobId(kept.run_id)))!.returnvalue).toEqual({
          run_id: kept.run_id,
          removed: false,
          note: "another deployment's workspace: left to it",
        });
        await bRetention.getJob(reapJobId(kept.run_id)).then((j) => j!.remove());
        // B's own sweeps scheduled nothing for A's runs.
        expect((await bRetention.getJobs(["delayed", "waiting", "active", "completed", "failed"])).map((j) => j.id)).toEqual([]);
      } finally {
        await bRetention.close();
      }
      expect(missing(), `after ${what}'s reap job`).toEqual([]);

      // B's CLI: A's runs are not B's to list or pin.
      const list = JSON.parse((await runCli(["sandbox", "list", "--json"], env)).stdout) as { runs: unknown[] };
      expect(list.runs).toEqual([]);
      const pin = await runCli(["sandbox", "pin", kept.run_id], env);
      expect(pin.code).toBe(1);
      expect(pin.stderr).toBe(
        `sandcastle-queue: ${kept.run_id} is retained by another deployment (another SCQ_KEY_PREFIX or Redis), not this one: pin or open it with that deployment's settings\n`,
      );
      await second.stop();
    }

    // A's run goes on: released, it ends ok, its whole log retained; its earlier workspace is still there with its reap job.
    writeFileSync(join(agentRepo, ".scq-release"), "");
    await waitFor(
      async () => (await (await a.s.queue.getJob(longId))!.getState()) === "completed",
      120_000,
      () => "A's long run to end",
    );
    expect((await a.s.queue.getJob(longId))!.returnvalue).toMatchObject({ status: "ok", branch: "agent/long" });
    // Kept just after its result (ADR 0051).
    await a.s.kept(longId);
    const longLog = readFileSync(join(a.s.runsDir, longId, "job", "session.log"), "utf8");
    expect(longLog).toMatch(/run started on agent\/long/);
    expect(longLog).toMatch(/run ok/);
    expect(existsSync(join(keptDir, "retained.json"))).toBe(true);
    const aRetention = new Queue(SANDBOX_RETENTION_QUEUE, { connection: a.s.redis, prefix: a.s.prefix });
    try {
      expect(await reapDueAt(a.s.redis, aRetention, kept.run_id)).not.toBeNull();
      // Scheduled before its retained.json.
      expect(await reapDueAt(a.s.redis, aRetention, longId)).not.toBeNull();
    } finally {
      await aRetention.close();
    }
  });
});
