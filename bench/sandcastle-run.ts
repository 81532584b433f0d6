// Benchmarks of the sandcastle-run pipeline, each measured side by side with its baseline in one run.
import { spawn } from "node:child_process";
import { mkdirSync, mkdtempSync, readdirSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join, resolve } from "node:path";
import { createInterface } from "node:readline";
import { QueueEvents } from "bullmq";
import { bullConnection, type RedisClient } from "../src/redis/connect.js";
import { enqueueRun, type Queues } from "../queues/index.js";
import { startWorkers } from "../workers/index.js";
import { loadConfig } from "../src/config.js";
import { KillSwitch } from "../src/control/kill-switch.js";
import type { Logger } from "../src/log.js";
import type { RedisTarget } from "../src/redis/target.js";
import { BUILT_IN_CHILD } from "../src/sandcastle/worker/child-command.js";
import { entryLines, sessionLogKey } from "../src/session-log/session-log.js";
import { makeGitRepo } from "../test/helpers/git-repo.js";
import { alternatePairs, median, pairReport, percentile, round } from "./stats.js";

export interface BenchContext {
  readonly target: RedisTarget;
  readonly redis: RedisClient;
  readonly queues: Queues;
  readonly prefix: string;
  readonly log: Logger;
  readonly quick: boolean;
}

const BENCH_CHILD = resolve(import.meta.dirname, "../../bench/fixtures/bench-child.mjs");
const SCRIPT_TEMPLATE = resolve(import.meta.dirname, "../../test/fixtures/sandcastle/commit-file");
const MANY_LINES = resolve(import.meta.dirname, "../../test/fixtures/sandcastle/many-lines");

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

/** The bench's workers on its own prefix, with a QueueEvents to wait on; both closed after `body`. */
export async function withWorkers<T>(ctx: BenchContext, s: { env: NodeJS.ProcessEnv }, body: (events: QueueEvents) => Promise<T>): Promise<T> {
  const config = loadConfig({ ...s.env, SCQ_KEY_PREFIX: ctx.prefix });
  const running = await startWorkers({
    config,
    target: ctx.target,
    queues: ctx.queues,
    log: ctx.log,
    redis: ctx.redis,
    killSwitch: new KillSwitch(ctx.redis, ctx.prefix, undefined),
    secretSource: { PATH: process.env.PATH, HOME: process.env.HOME },
  });
  const bull = bullConnection(ctx.target);
  const events = new QueueEvents("sandcastle-run", { connection: bull.connection, prefix: ctx.prefix });
  await events.waitUntilReady();
  try {
    return await body(events);
  } finally {
    await events.close();
    await bull.close();
    await running.close(5000);
  }
}

function request(s: Scratch, extra: Record<string, string>, patch: Record<string, unknown> = {}) {
  return {
    session_id: "bench",
    agent: "script",
    sandbox: "noSandbox",
    dry_run: true,
    prompt_template_dir: s.dir,
    branch: "bench/x",
    repo_workdir: s.dir,
    env_manifest_name: "bench",
    extra_env: extra,
    ...patch,
  };
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

/** Bare readline over one command's stdout: lines per second, spawn to close. */
async function readlineRate(command: string, args: string[], env: NodeJS.ProcessEnv): Promise<number> {
  const t0 = performance.now();
  let count = 0;
  await new Promise<void>((res) => {
    const c = spawn(command, args, { env, stdio: ["ignore", "pipe", "ignore"] });
    const rl = createInterface({ input: c.stdout! });
    rl.on("line", () => (count += 1));
    rl.once("close", () => res());
  });
  return count / ((performance.now() - t0) / 1000);
}

/** Bare readline over the bench child. */
const bareReadline = (lines: number) => readlineRate(process.execPath, [BENCH_CHILD], { PATH: process.env.PATH, LINES: String(lines) });

/**
 * The stdout pipeline (split, redact, parse, batch to Redis, tail) against bare readline over the same
 * synthetic child: the worker's part alone. Pairs alternate (alternatePairs).
 */
export async function benchPipeline(ctx: BenchContext): Promise<object> {
  const lines = ctx.quick ? 100_000 : 1_000_000;
  const reps = ctx.quick ? 1 : 7;
  const s = scratch(BENCH_CHILD);
  let rssGrowth = 0;
  const pairs = await withWorkers(ctx, s, (events) =>
    alternatePairs(
      reps,
      () => bareReadline(lines),
      async (r) => {
        // RSS growth while the job runs, over the RSS just before it (bare readline's own heap is not ours).
        const peak = sampleRss(process.pid);
        const t0 = performance.now();
        // One session per run, as the poller makes them (each keeps its own capped log).
        const result = await runJob(ctx, s, events, { LINES: String(lines) }, { session_id: `pipeline-${r}` });
        const seconds = (performance.now() - t0) / 1000;
        rssGrowth = Math.max(rssGrowth, peak.stop().growthMib);
        if (result.status !== "ok") throw new Error(`pipeline bench run ended ${result.status}`);
        return (lines + 2) / seconds;
      },
    ),
  );
  rmSync(s.dir, { recursive: true, force: true });
  await forgetSessions(ctx, Array.from({ length: reps }, (_, r) => `pipeline-${r}`));
  return {
    bench: "stdout_pipeline_lines_per_s",
    lines,
    reps,
    ...pairReport(pairs, { measured: "queue_lines_per_s", baseline: "bare_readline_lines_per_s" }, 0.5),
    peak_rss_growth_mib: round(rssGrowth, 1),
    goal_rss_growth_mib: 64,
    meets_rss: rssGrowth < 64,
  };
}

/**
 * The benches after this one start on a Redis at rest: the sessions' millions of lines deleted and the append-only file
 * rewritten now (a rewrite Redis would start by itself later, forking a process of that size, slows whatever runs then).
 */
async function forgetSessions(ctx: BenchContext, sessions: readonly string[]): Promise<void> {
  for (const session of sessions) await ctx.redis.del(sessionLogKey(ctx.prefix, session));
  await ctx.redis.bgrewriteaof().catch(() => undefined); // one already under way is as good
  const rewriting = async () => /aof_rewrite_in_progress:1|aof_rewrite_scheduled:1/.test(await ctx.redis.info("persistence"));
  while (await rewriting()) await new Promise((r) => setTimeout(r, 100));
}

/** Peak RSS of a process (VmRSS from /proc, every 20 ms) from now until stop(): MiB over the first sample. */
function sampleRss(pid: number): { stop(): { peakMib: number; growthMib: number } } {
  const read = () => {
    try {
      const kb = /VmRSS:\s+(\d+)/.exec(readFileSync(`/proc/${pid}/status`, "utf8"))?.[1];
      return kb === undefined ? 0 : Number(kb) / 1024;
    } catch {
      return 0;
    }
  };
  const base = read();
  let peak = base;
  const timer = setInterval(() => (peak = Math.max(peak, read())), 20);
  return {
    stop() {
      clearInterval(timer);
      return { peakMib: peak, growthMib: peak - base };
    },
  };
}

/** Peak RSS of every built-in child alive while `body` runs (found by its command line), in MiB. */
async function childPeakRss<T>(body: () => Promise<T>): Promise<{ value: T; peakMib: number }> {
  let peak = 0;
  const sample = () => {
    for (const pid of readdirSync("/proc").filter((n) => /^\d+$/.test(n))) {
      try {
        if (!readFileSync(`/proc/${pid}/cmdline`, "utf8").includes(BUILT_IN_CHILD)) continue;
        const kb = /VmRSS:\s+(\d+)/.exec(readFileSync(`/proc/${pid}/status`, "utf8"))?.[1];
        if (kb !== undefined) peak = Math.max(peak, Number(kb) / 1024);
      } catch {
        // gone meanwhile
      }
    }
  };
  const timer = setInterval(sample, 20);
  try {
    return { value: await body(), peakMib: peak };
  } finally {
    clearInterval(timer);
  }
}

/** Bare readline over the many-lines agent itself. */
const bareAgent = (lines: number) => readlineRate(join(MANY_LINES, "agent.sh"), [], { PATH: process.env.PATH, LINES: String(lines), STAMP: "1" });

/**
 * The real path — agent → Sandcastle → the built-in child → worker → session log — on the real library
 * with the script agent, against bare readline over the same agent. Its lines/s run from the agent's
 * first line (it prints when it started) to the session-log entry holding its last line (a stream id
 * is the time Redis took the entry): the child's and Sandcastle's start-up, seconds on a loaded
 * machine, are the dry-run bench's business. Then memory: a 50 MB line followed by 500 k lines, the
 * worker's RSS growth and the child's peak over a child whose agent prints nothing.
 */
export async function benchRealPath(ctx: BenchContext): Promise<object> {
  const lines = ctx.quick ? 50_000 : 200_000;
  const reps = ctx.quick ? 1 : 5;
  const s = scratch("");
  const repo = join(s.dir, "repo");
  makeGitRepo(repo);
  const job = (events: QueueEvents, session: string, extra: Record<string, string>) =>
    runJob(ctx, s, events, extra, {
      prompt_template_dir: MANY_LINES,
      repo_workdir: repo,
      branch: `bench/${session}`,
      session_id: session,
      timeout_minutes: 10,
    });
  const { pairs, memory } = await withWorkers(ctx, s, async (events) => {
    const pairs = await alternatePairs(
      reps,
      () => bareAgent(lines),
      async (r) => {
        const session = `real-path-${r}`;
        const result = await job(events, session, { LINES: String(lines), STAMP: "1" });
        if (result.status !== "ok") throw new Error(`real-path bench run ended ${result.status}`);
        const { first, lastEntryMs } = await agentSpan(ctx, session);
        return (lines + 2) / ((lastEntryMs - first) / 1000);
      },
    );
    const idle = await childPeakRss(() => job(events, "real-path-idle", { LINES: "0" }));
    const worker = sampleRss(process.pid);
    const loaded = await childPeakRss(() => job(events, "real-path-memory", { LINES: "500000", BIG_LINE_MB: "50" }));
    const workerGrowth = worker.stop().growthMib;
    if (loaded.value.status !== "ok") throw new Error(`real-path memory run ended ${loaded.value.status}`);
    return { pairs, memory: { worker: workerGrowth, child: loaded.peakMib - idle.peakMib, childPeak: loaded.peakMib } };
  });
  rmSync(s.dir, { recursive: true, force: true });
  return {
    bench: "real_path_lines_per_s",
    lines,
    reps,
    ...pairReport(pairs, { measured: "real_path_lines_per_s", baseline: "bare_readline_lines_per_s" }, 0.25),
    big_line_then_500k: {
      worker_rss_growth_mib: round(memory.worker, 1),
      child_rss_growth_mib: round(memory.child, 1),
      child_peak_rss_mib: round(memory.childPeak, 1),
      goal_rss_growth_mib: 64,
      meets_rss: memory.worker < 64 && memory.child < 64,
    },
  };
}

/** When the agent of a session's run started (its first line), and when Redis took the entry with its last line. */
async function agentSpan(ctx: BenchContext, session: string): Promise<{ first: number; lastEntryMs: number }> {
  const key = sessionLogKey(ctx.prefix, session);
  let first = Number.NaN;
  let lastEntryMs = Number.NaN;
  let start = "-";
  for (;;) {
    const entries = await ctx.redis.xrange(key, start, "+", "COUNT", 500);
    for (const [id, fields] of entries) {
      const text = entryLines(fields).join("\n");
      const stamp = /agent started (\d+)/.exec(text)?.[1];
      if (stamp !== undefined) first = Number(stamp);
      if (text.includes("last line")) lastEntryMs = Number(id.split("-")[0]);
    }
    if (entries.length < 500) break;
    start = `(${entries[entries.length - 1]![0]}`;
  }
  if (Number.isNaN(first) || Number.isNaN(lastEntryMs)) throw new Error(`session ${session}: the agent's first or last line is not in its log`);
  return { first, lastEntryMs };
}

/** A dry-run job on the real Sandcastle (script agent) against running the child program directly. */
export async function benchDryRun(ctx: BenchContext): Promise<object> {
  const reps = ctx.quick ? 1 : 5;
  const s = scratch("");
  const repo = join(s.dir, "repo");
  makeGitRepo(repo);

  const runDirect = async (r: number): Promise<number> => {
    // A run directory of its own, as the worker makes (the child keeps Sandcastle's log and the agent's FIFO there).
    const runDir = join(s.configDir, `direct-${r}`);
    mkdirSync(runDir, { mode: 0o700 });
    const cfg = join(runDir, "config.json");
    const req = {
      ...request(s, {}, { prompt_template_dir: SCRIPT_TEMPLATE, repo_workdir: repo, branch: `bench/direct-${r}`, session_id: `direct-${r}` }),
      timeout_minutes: 5,
      dry_run: true,
      parallel_implementers: 1,
      on_capacity: "wait",
      model: undefined,
    };
    writeFileSync(cfg, JSON.stringify({ version: 1, run_id: `direct-${r}`, request: JSON.parse(JSON.stringify(req)), env: {} }), { mode: 0o600 });
    const t0 = performance.now();
    await new Promise<void>((res, rej) => {
      const c = spawn(process.execPath, [BUILT_IN_CHILD, "run", "--config", cfg, "--json"], {
        cwd: repo,
        env: { PATH: process.env.PATH, HOME: process.env.HOME, NODE_NO_WARNINGS: "1" },
        stdio: ["pipe", "ignore", "ignore"],
      });
      c.once("exit", (code) => (code === 0 ? res() : rej(new Error(`direct child exited ${code}`))));
    });
    return performance.now() - t0;
  };
  // Alternating direct and queued runs (alternatePairs): the ratio is the median of the pairs'.
  const pairs = await withWorkers(ctx, s, (events) =>
    alternatePairs(reps, runDirect, async (r) => {
      const t0 = performance.now();
      const result = await runJob(
        ctx,
        s,
        events,
        {},
        { prompt_template_dir: SCRIPT_TEMPLATE, repo_workdir: repo, branch: `bench/queued-${r}`, session_id: `queued-${r}`, timeout_minutes: 5 },
      );
      if (result.status !== "ok") throw new Error(`dry-run bench ended ${result.status}`);
      return performance.now() - t0;
    }),
  );
  rmSync(s.dir, { recursive: true, force: true });
  const ratio = pairs.ratio;
  const queued = pairs.measured;
  const direct = pairs.baseline;
  return {
    bench: "dry_run_wall_time_ms",
    reps,
    queued_median: Math.round(median(queued)),
    direct_median: Math.round(median(direct)),
    ratio,
    pair_ratios: pairs.ratios,
    goal_ratio: 1.15,
    meets: ratio <= 1.15,
  };
}
