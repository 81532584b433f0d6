// GET /metrics in Prometheus' text format (prom-client). Gauges are read from Redis at scrape time (queue
// depths, active runs, Redis up); counters and the run-duration histogram count what this process hears on
// BullMQ's event streams from its start, as Prometheus counters do (rate() copes with restarts).
import { QueueEvents } from "bullmq";
import { bullConnection, type RedisClient } from "../redis/connect.js";
import { Counter, Gauge, Histogram, Registry } from "prom-client";
import { queueCounts, readRunResult, type Queues } from "../../queues/index.js";
import type { Logger } from "../log.js";
import type { RedisTarget } from "../redis/target.js";
import type { SandcastleRunResult } from "../sandcastle/contract.js";

export const METRICS_PATH = "/metrics";
/** Seconds: a dry run takes about one, an agent run minutes, the cap is 4 h. */
const DURATION_BUCKETS = [1, 5, 15, 30, 60, 120, 300, 600, 1200, 1800, 3600, 7200, 14400];

export interface MetricsDeps {
  readonly queues: Queues;
  readonly redis: RedisClient;
  readonly target: RedisTarget;
  readonly prefix: string;
  readonly log: Logger;
}

export class ServiceMetrics {
  readonly registry = new Registry();
  private readonly runDuration: Histogram<"status">;
  private readonly skips: Counter<"reason">;
  private readonly failures: Counter<"reason">;
  private readonly drafts: Counter<"outcome">;
  private readonly intents: Counter<"status">;
  private readonly events: QueueEvents[] = [];
  private closeConnection: () => Promise<void> = async () => {};

  constructor(private readonly deps: MetricsDeps) {
    const registers = [this.registry];
    const { queues, redis } = deps;
    new Gauge({
      name: "scq_queue_jobs",
      help: "Jobs in each queue by state",
      labelNames: ["queue", "state"],
      registers,
      async collect() {
        this.reset();
        for (const [queue, counts] of Object.entries(await queueCounts(queues))) {
          for (const [state, n] of Object.entries(counts)) this.set({ queue, state }, n);
        }
      },
    });
    new Gauge({
      name: "scq_active_runs",
      help: "Sandcastle runs active now (a child running, or about to)",
      registers,
      async collect() {
        this.set(await queues.sandcastleRun.getActiveCount());
      },
    });
    new Gauge({
      name: "scq_redis_up",
      help: "1 when Redis answered PING within a second",
      registers,
      async collect() {
        const up = await Promise.race([redis.ping().then((p) => p === "PONG"), new Promise<boolean>((r) => setTimeout(() => r(false), 1000).unref())]).catch(() => false);
        this.set(up ? 1 : 0);
      },
    });
    this.runDuration = new Histogram({ name: "scq_run_duration_seconds", help: "Duration of finished Sandcastle runs by status", labelNames: ["status"], buckets: DURATION_BUCKETS, registers });
    this.skips = new Counter({ name: "scq_run_skips_total", help: "Runs skipped, by skip_reason", labelNames: ["reason"], registers });
    this.failures = new Counter({ name: "scq_run_failures_total", help: "Runs that did not end ok and were not skipped, by failure_reason", labelNames: ["reason"], registers });
    this.drafts = new Counter({ name: "scq_margot_drafts_total", help: "Margot drafts by outcome (drafted, queued_rate_limit, approved, rejected, deferred, expired, posted)", labelNames: ["outcome"], registers });
    this.intents = new Counter({ name: "scq_margot_intents_total", help: "Margot research completions decided, by status", labelNames: ["status"], registers });
  }

  /** A finished run's result, counted once. */
  observeRun(result: SandcastleRunResult): void {
    if (result.status === "skipped") {
      this.skips.inc({ reason: result.skip_reason ?? "unknown" });
      return;
    }
    this.runDuration.observe({ status: result.status }, result.duration_seconds);
    if (result.status !== "ok") this.failures.inc({ reason: result.failure_reason ?? "unknown" });
  }

  /** A margot-intent job's return value: an intent decision, a reaction or a timer that changed a draft. */
  observeMargot(value: unknown): void {
    if (value === null || typeof value !== "object") return;
    const v = value as { interaction_id?: unknown; status?: unknown; changed?: unknown; state?: unknown };
    if (typeof v.interaction_id === "string" && typeof v.status === "string") {
      this.intents.inc({ status: v.status });
      if (v.status === "drafted" || v.status === "queued_rate_limit") this.drafts.inc({ outcome: v.status });
      return;
    }
    if (v.changed === true && typeof v.state === "string") this.drafts.inc({ outcome: v.state });
  }

  async start(): Promise<void> {
    const bull = bullConnection(this.deps.target);
    this.closeConnection = bull.close;
    const connection = bull.connection;
    const runs = new QueueEvents(this.deps.queues.sandcastleRun.name, { connection, prefix: this.deps.prefix });
    const margot = new QueueEvents(this.deps.queues.margotIntent.name, { connection, prefix: this.deps.prefix });
    this.events.push(runs, margot);
    const runQueue = this.deps.queues.sandcastleRun;
    const countRun = async (jobId: string) => {
      const job = await runQueue.getJob(jobId);
      const result = job ? await readRunResult(this.deps.redis, runQueue, job) : null;
      if (result) this.observeRun(result);
    };
    const warn = (err: Error) => this.deps.log.warn({ err: err.message }, "metrics: could not read a finished job");
    runs.on("completed", ({ jobId }) => void countRun(jobId).catch(warn));
    runs.on("failed", ({ jobId }) => void countRun(jobId).catch(warn));
    margot.on("completed", ({ returnvalue }) => {
      try {
        this.observeMargot(typeof returnvalue === "string" ? JSON.parse(returnvalue) : returnvalue);
      } catch (err) {
        warn(err as Error);
      }
    });
    for (const e of this.events) e.on("error", () => {});
    await Promise.all(this.events.map((e) => e.waitUntilReady()));
  }

  async close(): Promise<void> {
    await Promise.allSettled(this.events.map((e) => e.close()));
    await this.closeConnection();
  }
}
