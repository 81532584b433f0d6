// Benchmarks of the margot-intent queue, each against its baseline measured in the same run:
//   margot-throughput  research completions/s through classify + rules + ledger + the local
//                      channel, as a ratio of BullMQ no-op jobs/s (same Redis, same concurrency)
//   expiry-lateness    how late 1,000 draft-expire jobs due within a few seconds run (and finish),
//                      next to 1,000 no-op delayed jobs due at the same times
import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join, resolve } from "node:path";
import { Queue, Worker, type ConnectionOptions, type Job } from "bullmq";
import { MARGOT_INTENT_QUEUE, MARGOT_JOB_OPTIONS, MARGOT_JOBS, openQueues, researchJobId, scheduleDraftExpire } from "../queues/index.js";
import { AuditLog } from "../src/audit/audit-log.js";
import { loadConfig } from "../src/config.js";
import { KillSwitch } from "../src/control/kill-switch.js";
import { createRedactor } from "../src/redact/index.js";
import { redisOptions } from "../src/redis/target.js";
import { DraftStore } from "../src/margot/store/drafts.js";
import { createMargotIntentWorker } from "../workers/margot-intent.js";
import type { BenchContext } from "./sandcastle-run.js";
import { alternatePairs, median, pairReport, percentile, round } from "./stats.js";

const PROJECTS = resolve(import.meta.dirname, "../../test/fixtures/margot/projects.json");
const SMOKE = resolve(import.meta.dirname, "../../test/fixtures/margot/smoke.json");
/** The worker's own setting (MARGOT_CONCURRENCY's default), on both sides of every pair. */
const CONCURRENCY = loadConfig({}).MARGOT_CONCURRENCY;

interface MargotRig {
  readonly dir: string;
  readonly prefix: string;
  readonly queue: Queue;
  /** The worker, running unless `autorun` is false (then `completionRate` runs it). */
  start(autorun?: boolean): Promise<Worker>;
  close(): Promise<void>;
}

/** The real margot-intent processor (local channel, no Linear) on its own prefix. */
async function margotRig(ctx: BenchContext, name: string, extraEnv: Record<string, string> = {}): Promise<MargotRig> {
  const dir = mkdtempSync(join(tmpdir(), "scq-bench-margot-"));
  const prefix = `{scq-bench-${name}}`;
  const config = loadConfig({
    SCQ_KEY_PREFIX: prefix,
    LOG_LEVEL: "silent",
    AUDIT_LOG_PATH: join(dir, "audit.jsonl"),
    MARGOT_LEDGER_PATH: join(dir, "ledger.jsonl"),
    PROJECTS_CONFIG_PATH: PROJECTS,
    MARGOT_RATE_LIMIT_MAX: "1000000",
    ...extraEnv,
  });
  const queues = openQueues(ctx.redis, prefix);
  const audit = new AuditLog(config.AUDIT_LOG_PATH, createRedactor());
  const spec = await createMargotIntentWorker({
    config,
    target: ctx.target,
    queues,
    log: ctx.log,
    redis: ctx.redis,
    killSwitch: new KillSwitch(ctx.redis, prefix, undefined),
    audit,
    secretSource: {},
  });
  let worker: Worker | null = null;
  return {
    dir,
    prefix,
    queue: queues.margotIntent,
    start: async (autorun = true) => {
      worker = new Worker(MARGOT_INTENT_QUEUE, spec.processor, {
        connection: redisOptions(ctx.target, "worker") as ConnectionOptions,
        prefix,
        concurrency: CONCURRENCY,
        autorun,
      });
      await worker.waitUntilReady();
      return worker;
    },
    close: async () => {
      await worker?.close();
      await spec.close?.();
      await audit.close();
      await queues.close();
      rmSync(dir, { recursive: true, force: true });
    },
  };
}

/**
 * Where one side's time went, per job: the worker's event loop busy (µs); redis-server in commands (µs, and how many,
 * the calls inside scripts counted: `INFO commandstats`).
 */
interface SideCost {
  readonly busyUs: number;
  readonly redisUs: number;
  readonly redisCalls: number;
}

async function redisCommandTotals(ctx: BenchContext): Promise<{ calls: number; usec: number }> {
  let calls = 0;
  let usec = 0;
  for (const m of (await ctx.redis.info("commandstats")).matchAll(/^cmdstat_(\w+):calls=(\d+),usec=(\d+)/gm)) {
    if (m[1] === "info") continue;
    calls += Number(m[2]);
    usec += Number(m[3]);
  }
  return { calls, usec };
}

/**
 * Jobs/s of a worker made with autorun off, over the n jobs already queued: timed from run() to its n-th
 * completion, the same way for both sides of a pair (connecting is not timed; a failed job fails the bench).
 * Its cost per job is put in `costs`.
 */
async function completionRate(ctx: BenchContext, worker: Worker, n: number, costs: SideCost[]): Promise<number> {
  await worker.waitUntilReady();
  let done = 0;
  const finished = new Promise<void>((resolve, reject) => {
    worker.on("completed", () => {
      if (++done === n) resolve();
    });
    worker.on("failed", (job, err) => reject(new Error(`bench job ${job?.id ?? "?"} failed: ${err.message}`)));
  });
  const redis0 = await redisCommandTotals(ctx);
  const loop0 = performance.eventLoopUtilization();
  const t0 = performance.now();
  void worker.run();
  await finished;
  const seconds = (performance.now() - t0) / 1000;
  const loop = performance.eventLoopUtilization(loop0);
  const redis1 = await redisCommandTotals(ctx);
  costs.push({ busyUs: (loop.active * 1000) / n, redisUs: (redis1.usec - redis0.usec) / n, redisCalls: (redis1.calls - redis0.calls) / n });
  return n / seconds;
}

async function noopRate(ctx: BenchContext, n: number, rep: number, costs: SideCost[]): Promise<number> {
  const prefix = `{scq-bench-noop-${rep}}`;
  const queue = new Queue("noop", { connection: ctx.redis, prefix });
  const worker = new Worker("noop", async () => null, {
    connection: redisOptions(ctx.target, "worker") as ConnectionOptions,
    prefix,
    concurrency: CONCURRENCY,
    autorun: false,
  });
  try {
    await queue.addBulk(Array.from({ length: n }, (_, i) => ({ name: "noop", data: { i }, opts: { jobId: `noop-${i}`, removeOnComplete: 1000 } })));
    return await completionRate(ctx, worker, n, costs);
  } finally {
    await worker.close();
    await queue.obliterate({ force: true });
    await queue.close();
  }
}

async function waitCompleted(queue: Queue, n: number, timeoutMs: number): Promise<void> {
  const deadline = Date.now() + timeoutMs;
  for (;;) {
    const counts = await queue.getJobCounts("completed", "failed");
    if ((counts.failed ?? 0) > 0) throw new Error(`${counts.failed} margot bench jobs failed`);
    if ((counts.completed ?? 0) >= n) return;
    if (Date.now() > deadline) throw new Error(`margot bench: ${counts.completed}/${n} jobs completed in time`);
    await new Promise((r) => setTimeout(r, 20));
  }
}

/**
 * Research completions/s (30 % action-shaped: drafted to the local channel) against no-op jobs/s, in alternating
 * pairs after one pair that is not counted: the steady state of a long-running worker, not its first jobs' JIT
 * warm-up. Nine pairs, as one pair moves by ±30 % on a shared two-core machine.
 */
export async function benchMargotThroughput(ctx: BenchContext): Promise<object> {
  const n = ctx.quick ? 300 : 2000;
  const reps = ctx.quick ? 1 : 9;
  const samples = (JSON.parse(await import("node:fs/promises").then((fs) => fs.readFile(SMOKE, "utf8"))) as { samples: Array<{ body: string }> }).samples.map(
    (s) => s.body,
  );
  let drafted = 0;
  const noopCosts: SideCost[] = [];
  const margotCosts: SideCost[] = [];
  const margotRate = async (rep: number, costs: SideCost[]): Promise<number> => {
    const rig = await margotRig(ctx, `throughput-${rep}`);
    try {
      // Enough completed jobs are kept to count them all.
      await rig.queue.addBulk(
        Array.from({ length: n }, (_, i) => {
          const interaction_id = `bench-${rep}-${i}`;
          const data = { interaction_id, body: samples[i % samples.length]!, originated_at: "2026-09-17T03:04:05Z", originating_session_id: "bench" };
          return {
            name: MARGOT_JOBS.researchCompleted,
            data,
            opts: { ...MARGOT_JOB_OPTIONS, jobId: researchJobId(interaction_id), removeOnComplete: { count: n } },
          };
        }),
      );
      const rate = await completionRate(ctx, await rig.start(false), n, costs);
      drafted = (await new DraftStore(ctx.redis, rig.prefix).list(n)).length;
      return rate;
    } finally {
      await rig.queue.obliterate({ force: true }).catch(() => {});
      await rig.close();
    }
  };
  if (!ctx.quick) {
    // The uncounted pair's costs are dropped with it.
    await noopRate(ctx, n, reps, []);
    await margotRate(reps, []);
  }
  const pairs = await alternatePairs(reps, (rep) => noopRate(ctx, n, rep, noopCosts), (rep) => margotRate(rep, margotCosts));
  return {
    bench: "margot_intent_jobs_per_s",
    jobs: n,
    reps,
    drafted_per_rep: drafted,
    ...pairReport(pairs, { measured: "margot_jobs_per_s", baseline: "noop_jobs_per_s" }, 0.3),
    // Medians per job: what each side costs the worker's event loop and redis-server, so a ratio short of its goal says where.
    per_job: { margot: medianCost(margotCosts), noop: medianCost(noopCosts) },
    note: "classify + rules + PII redaction + draft store + rate limit + fsynced ledger + audit, local channel, same concurrency as the no-op worker",
  };
}

function medianCost(costs: readonly SideCost[]): { event_loop_busy_us: number; redis_us: number; redis_commands: number } {
  return {
    event_loop_busy_us: Math.round(median(costs.map((c) => c.busyUs))),
    redis_us: Math.round(median(costs.map((c) => c.redisUs))),
    redis_commands: round(median(costs.map((c) => c.redisCalls)), 1),
  };
}

/** 1,000 draft-expire jobs due 2–4 s out: how late they start and finish, against no-op delayed jobs due at the same offsets. */
export async function benchExpiryLateness(ctx: BenchContext): Promise<object> {
  const n = 1000;
  const spreadMs = 2000;
  const leadMs = 2000;
  const dueTimes = (base: number) => Array.from({ length: n }, (_, i) => base + Math.floor((i / n) * spreadMs));

  // Baseline: no-op delayed jobs on their own prefix.
  const noopPrefix = "{scq-bench-noop-delayed}";
  const noopQueue = new Queue("noop-delayed", { connection: ctx.redis, prefix: noopPrefix });
  const noopLate: number[] = [];
  const noopWorker = new Worker(
    "noop-delayed",
    async (job: Job) => {
      // Against when BullMQ was told to run it (add time + delay), as for the expiry jobs' start_*.
      noopLate.push(Date.now() - (job.timestamp + (job.opts.delay ?? 0)));
      return null;
    },
    { connection: redisOptions(ctx.target, "worker") as ConnectionOptions, prefix: noopPrefix, concurrency: CONCURRENCY },
  );
  try {
    const dues = dueTimes(Date.now() + leadMs);
    await noopQueue.addBulk(
      dues.map((due, i) => ({ name: "noop", data: { due }, opts: { jobId: `noop-${i}`, delay: Math.max(0, due - Date.now()), removeOnComplete: true } })),
    );
    const deadline = Date.now() + 60_000;
    while (noopLate.length < n && Date.now() < deadline) await new Promise((r) => setTimeout(r, 20));
  } finally {
    await noopWorker.close();
    await noopQueue.obliterate({ force: true }).catch(() => {});
    await noopQueue.close();
  }

  // The real thing: posted drafts whose expiry jobs fall due; the processor expires each (state, audit, fsynced ledger, notice).
  const rig = await margotRig(ctx, "expiry");
  const store = new DraftStore(ctx.redis, rig.prefix);
  const ids = Array.from({ length: n }, (_, i) => `d-bench${String(i).padStart(6, "0")}`);
  try {
    await Promise.all(
      ids.map((id, i) =>
        store.create({
          id,
          interaction_id: `bench-exp-${i}`,
          title: "bench",
          body: "bench",
          ticket: {} as never,
          target_repo: null,
          project: null,
          classification: "action_shaped",
          confidence: 0.9,
          channel: "local",
          created_at: new Date().toISOString(),
          marker_nonce: "bench",
        }),
      ),
    );
    await rig.start();
    const dues = dueTimes(Date.now() + leadMs);
    const pipeline = ctx.redis.pipeline();
    ids.forEach((id, i) =>
      pipeline.hset(store.key(id), "state", "posted", "generation", "0", "posted_at", new Date().toISOString(), "expires_at", new Date(dues[i]!).toISOString()),
    );
    await pipeline.exec();
    await Promise.all(ids.map((id, i) => scheduleDraftExpire(rig.queue, id, 0, dues[i]!)));
    if (Date.now() > dues[0]!) throw new Error("scheduling took longer than the lead time: lateness would be meaningless");
    await waitCompleted(rig.queue, n, 60_000);
    const jobs = await rig.queue.getJobs(["completed"], 0, n);
    const startLate = jobs.map((j) => (j.processedOn ?? 0) - (j.timestamp + (j.opts.delay ?? 0)));
    const drafts = await store.list(n);
    const doneLate = drafts.map((d) => Date.parse(d.decided_at ?? "") - Date.parse(d.expires_at ?? ""));
    return {
      bench: "draft_expiry_lateness_ms",
      jobs: n,
      due_within_ms: leadMs + spreadMs,
      expired: drafts.filter((d) => d.state === "expired").length,
      start_p50: round(percentile(startLate, 50)),
      start_p99: round(percentile(startLate, 99)),
      expired_p50: round(percentile(doneLate, 50)),
      expired_p99: round(percentile(doneLate, 99)),
      noop_delayed_p50: round(percentile(noopLate, 50)),
      noop_delayed_p99: round(percentile(noopLate, 99)),
    };
  } finally {
    await rig.queue.obliterate({ force: true }).catch(() => {});
    await rig.close();
  }
}
