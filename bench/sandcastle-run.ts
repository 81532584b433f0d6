// Benchmarks of the sandcastle-run pipeline, each measured side by side with its baseline in one run.
import { spawn } from "node:child_process";
import { mkdirSync, mkdtempSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join, resolve } from "node:path";
import { createInterface } from "node:readline";
import { QueueEvents, type ConnectionOptions } from "bullmq";
import type { Redis } from "ioredis";
import { enqueueRun, type Queues } from "../queues/index.js";
import { startWorkers } from "../workers/index.js";
import { loadConfig } from "../src/config.js";
import { KillSwitch } from "../src/control/kill-switch.js";
import type { Logger } from "../src/log.js";
import { redisOptions, type RedisTarget } from "../src/redis/target.js";
import { BUILT_IN_CHILD } from "../src/sandcastle/child-command.js";
import { makeGitRepo } from "../test/helpers/git-repo.js";
import { median, percentile, round } from "./stats.js";

export interface BenchContext {
  readonly target: RedisTarget;
  readonly redis: Redis;
  readonly queues: Queues;
  readonly prefix: string;
  readonly log: Logger;
  readonly quick: boolean;
}

const BENCH_CHILD = resolve(import.meta.dirname, "../../bench/fixtures/bench-child.mjs");
const SCRIPT_TEMPLATE = resolve(import.meta.dirname, "../../test/fixtures/sandcastle/commit-file");

interface Scratch {
  dir: string;
  manifests: string;
  configDir: string;
  env: NodeJS.ProcessEnv;
}

function scratch(bin: string): Scratch {
  const dir = mkdtempSync(join(tmpdir(), "scq-bench-"));
  const manifests = join(dir, "manifests");
  const configDir = join(dir, "shm");
  mkdirSync(manifests);
  mkdirSync(configDir);
  writeFileSync(join(manifests, "bench.json"), JSON.stringify({ project_slug: "bench", vars: [] }));
  const env: NodeJS.ProcessEnv = {
    TAO_SANDCASTLE_ENABLED: "1",
    SANDCASTLE_BIN: bin,
    SANDCASTLE_CONFIG_DIR: configDir,
    ENV_MANIFEST_DIR: manifests,
    AUDIT_LOG_PATH: join(dir, "audit.jsonl"),
    RUNS_DIR: join(dir, "runs"),
    LOG_LEVEL: "silent",
  };
  return { dir, manifests, configDir, env };
}

async function withWorkers<T>(ctx: BenchContext, s: Scratch, body: (events: QueueEvents) => Promise<T>): Promise<T> {
  const config = loadConfig({ ...s.env, SCQ_KEY_PREFIX: ctx.prefix });
  const running = await startWorkers({ config, target: ctx.target, queues: ctx.queues, log: ctx.log, redis: ctx.redis, killSwitch: new KillSwitch(ctx.redis, ctx.prefix, undefined), secretSource: { PATH: process.env.PATH, HOME: process.env.HOME } });
  const events = new QueueEvents("sandcastle-run", { connection: redisOptions(ctx.target, "worker") as ConnectionOptions, prefix: ctx.prefix });
  await events.waitUntilReady();
  try {
    return await body(events);
  } finally {
    await events.close();
    await running.close(5000);
  }
}

function request(s: Scratch, extra: Record<string, string>, patch: Record<string, unknown> = {}) {
  return { session_id: "bench", agent: "script", sandbox: "noSandbox", dry_run: true, prompt_template_dir: s.dir, branch: "bench/x", repo_workdir: s.dir, env_manifest_name: "bench", extra_env: extra, ...patch };
}

async function runJob(ctx: BenchContext, s: Scratch, events: QueueEvents, extra: Record<string, string>, patch: Record<string, unknown> = {}) {
  const { runId } = await enqueueRun(ctx.queues.sandcastleRun, request(s, extra, patch), { envManifestDir: s.manifests });
  const job = await ctx.queues.sandcastleRun.getJob(runId);
  return (await job!.waitUntilFinished(events)) as { status: string; log_tail: string[] };
}

const startedAt = (lines: readonly string[]) => Number(/started ([\d.]+)/.exec(lines.find((l) => l.startsWith("started ")) ?? "")?.[1]);

/** enqueue → child process start, against a bare child_process.spawn of the same child. */
export async function benchStartLatency(ctx: BenchContext): Promise<object> {
  const n = ctx.quick ? 8 : 40;
  const s = scratch(BENCH_CHILD);
  const bare: number[] = [];
  for (let i = 0; i < n; i++) {
    const t0 = performance.timeOrigin + performance.now();
    const first = await new Promise<string>((res) => {
      const c = spawn(process.execPath, [BENCH_CHILD], { env: { PATH: process.env.PATH, LINES: "0" }, stdio: ["ignore", "pipe", "ignore"] });
      createInterface({ input: c.stdout! }).once("line", res);
    });
    bare.push(Number(first.split(" ")[1]) - t0);
  }
  const ours = await withWorkers(ctx, s, async (events) => {
    const out: number[] = [];
    for (let i = 0; i < n; i++) {
      const t0 = performance.timeOrigin + performance.now();
      const result = await runJob(ctx, s, events, { LINES: "0" });
      out.push(startedAt(result.log_tail) - t0);
    }
    return out;
  });
  rmSync(s.dir, { recursive: true, force: true });
  return {
    bench: "enqueue_to_child_start_ms",
    n,
    queue_p50: round(percentile(ours, 50)),
    queue_p99: round(percentile(ours, 99)),
    bare_spawn_p50: round(percentile(bare, 50)),
    bare_spawn_p99: round(percentile(bare, 99)),
    added_p50: round(percentile(ours, 50) - percentile(bare, 50)),
  };
}

/** Bare readline over the bench child: lines per second. */
async function bareReadline(lines: number): Promise<number> {
  const t0 = performance.now();
  let count = 0;
  await new Promise<void>((res) => {
    const c = spawn(process.execPath, [BENCH_CHILD], { env: { PATH: process.env.PATH, LINES: String(lines) }, stdio: ["ignore", "pipe", "ignore"] });
    const rl = createInterface({ input: c.stdout! });
    rl.on("line", () => (count += 1));
    rl.once("close", () => res());
  });
  return count / ((performance.now() - t0) / 1000);
}

/**
 * The stdout pipeline (split, redact, parse, batch to Redis, tail) against bare readline over the same child.
 * Runs alternate (bare, queued, bare, queued, …) and the ratio is the median of each pair's ratio, so a
 * noisy neighbour slows both sides of a pair rather than one phase of the bench.
 */
export async function benchPipeline(ctx: BenchContext): Promise<object> {
  const lines = ctx.quick ? 100_000 : 1_000_000;
  const reps = ctx.quick ? 1 : 7;
  const s = scratch(BENCH_CHILD);
  const { bare, queued, rssGrowth } = await withWorkers(ctx, s, async (events) => {
    const bare: number[] = [];
    const queued: number[] = [];
    let rssGrowth = 0;
    for (let r = 0; r < reps; r++) {
      bare.push(await bareReadline(lines));
      // RSS growth while the job runs, over the RSS just before it (bare readline's own heap is not ours).
      const base = process.memoryUsage().rss;
      let peak = base;
      const sampler = setInterval(() => (peak = Math.max(peak, process.memoryUsage().rss)), 20);
      const t0 = performance.now();
      // One session per run, as the poller makes them (each keeps its own capped log).
      const result = await runJob(ctx, s, events, { LINES: String(lines) }, { session_id: `pipeline-${r}` });
      queued.push((lines + 2) / ((performance.now() - t0) / 1000));
      clearInterval(sampler);
      rssGrowth = Math.max(rssGrowth, (peak - base) / 2 ** 20);
      if (result.status !== "ok") throw new Error(`pipeline bench run ended ${result.status}`);
    }
    return { bare, queued, rssGrowth };
  });
  rmSync(s.dir, { recursive: true, force: true });
  const ratio = median(queued.map((q, i) => q / bare[i]!));
  return {
    bench: "stdout_pipeline_lines_per_s",
    lines,
    reps,
    queue_lines_per_s: Math.round(median(queued)),
    bare_readline_lines_per_s: Math.round(median(bare)),
    ratio: round(ratio),
    pair_ratios: queued.map((q, i) => round(q / bare[i]!)),
    goal_ratio: 0.5,
    meets_ratio: ratio >= 0.5,
    peak_rss_growth_mib: round(rssGrowth, 1),
    goal_rss_growth_mib: 64,
    meets_rss: rssGrowth < 64,
  };
}

/** A dry-run job on the real Sandcastle (script agent) against running the child program directly. */
export async function benchDryRun(ctx: BenchContext): Promise<object> {
  const reps = ctx.quick ? 1 : 5;
  const s = scratch("");
  const repo = join(s.dir, "repo");
  makeGitRepo(repo);

  const runDirect = async (r: number): Promise<number> => {
    const cfg = join(s.configDir, `direct-${r}.json`);
    const req = { ...request(s, {}, { prompt_template_dir: SCRIPT_TEMPLATE, repo_workdir: repo, branch: `bench/direct-${r}`, session_id: `direct-${r}` }), timeout_minutes: 5, dry_run: true, parallel_implementers: 1, on_capacity: "wait", model: undefined };
    writeFileSync(cfg, JSON.stringify({ version: 1, run_id: `direct-${r}`, request: JSON.parse(JSON.stringify(req)), env: {} }), { mode: 0o600 });
    const t0 = performance.now();
    await new Promise<void>((res, rej) => {
      const c = spawn(process.execPath, [BUILT_IN_CHILD, "run", "--config", cfg, "--json"], { cwd: repo, env: { PATH: process.env.PATH, HOME: process.env.HOME, NODE_NO_WARNINGS: "1" }, stdio: ["pipe", "ignore", "ignore"] });
      c.once("exit", (code) => (code === 0 ? res() : rej(new Error(`direct child exited ${code}`))));
    });
    return performance.now() - t0;
  };
  // Alternating direct and queued runs, as the pipeline bench does: the ratio is the median of the pairs'.
  const { direct, queued } = await withWorkers(ctx, s, async (events) => {
    const direct: number[] = [];
    const queued: number[] = [];
    for (let r = 0; r < reps; r++) {
      direct.push(await runDirect(r));
      const t0 = performance.now();
      const result = await runJob(ctx, s, events, {}, { prompt_template_dir: SCRIPT_TEMPLATE, repo_workdir: repo, branch: `bench/queued-${r}`, session_id: `queued-${r}`, timeout_minutes: 5 });
      if (result.status !== "ok") throw new Error(`dry-run bench ended ${result.status}`);
      queued.push(performance.now() - t0);
    }
    return { direct, queued };
  });
  rmSync(s.dir, { recursive: true, force: true });
  const ratio = median(queued.map((q, i) => q / direct[i]!));
  return { bench: "dry_run_wall_time_ms", reps, queued_median: Math.round(median(queued)), direct_median: Math.round(median(direct)), ratio: round(ratio), pair_ratios: queued.map((q, i) => round(q / direct[i]!)), goal_ratio: 1.15, meets: ratio <= 1.15 };
}
