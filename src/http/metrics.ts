// GET /metrics in Prometheus' text format (prom-client). Gauges are read from Redis at scrape time (queue
// depths, active runs, Redis up); counters and the run-duration histogram count what this process hears on
// BullMQ's event streams from its start, as Prometheus counters do (rate() copes with restarts). Every
// labelled series whose label values are a closed set is there from the start at 0, so a first event is an
// increase rate() sees, not a new series. The process's own metrics (memory, CPU, event-loop lag, GC…) are
// prom-client's defaults.
import { QueueEvents } from "bullmq";
import { bullConnection, type RedisClient } from "../redis/connect.js";
import { collectDefaultMetrics, Counter, Gauge, Histogram, Registry } from "prom-client";
import { queueCounts, readRunResult, type Queues } from "../../queues/index.js";
import { FAILURE_REASONS, IntentStatus, SKIP_REASONS } from "../audit/vocabulary.js";
import type { Logger } from "../log.js";
import { DraftState } from "../margot/store/drafts.js";
import type { RedisTarget } from "../redis/target.js";
import { AGENTS, RUN_STATUSES, type SandcastleRunResult } from "../sandcastle/contract.js";

export const METRICS_PATH = "/metrics";
/** Seconds: a dry run takes about one, an agent run minutes, the cap is 4 h. */
const DURATION_BUCKETS = [1, 5, 15, 30, 60, 120, 300, 600, 1200, 1800, 3600, 7200, 14400];
/** How a job left its queue: BullMQ's two finished sets (a run that did not end ok is a failed job, ADR 0010). */
const FINISHED_STATES = ["completed", "failed"] as const;
/** What scq_margot_drafts_total counts: the two first decisions that make a draft, then the draft's changes. */
/** What scq_agent_tokens_total counts: the result's `usage`, by kind of token. */
const TOKEN_KINDS = {
  input: "input_tokens",
  output: "output_tokens",
  cache_read: "cache_read_input_tokens",
  cache_creation: "cache_creation_input_tokens",
} as const;
const DRAFT_OUTCOMES = ["drafted", "queued_rate_limit", ...DraftState.options.filter((s) => s !== "pending" && s !== "queued" && s !== "posting")];

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
  private readonly finished: Counter<"queue" | "state">;
  private readonly tokens: Counter<"agent" | "kind">;
  private readonly egress: Counter<"decision">;
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
        const up = await Promise.race([redis.ping().then((p) => p === "PONG"), new Promise<boolean>((r) => setTimeout(() => r(false), 1000).unref())]).catch(
          () => false,
        );
        this.set(up ? 1 : 0);
      },
    });
    this.runDuration = new Histogram({
      name: "scq_run_duration_seconds",
      help: "Duration of finished Sandcastle runs by status",
      labelNames: ["status"],
      buckets: DURATION_BUCKETS,
      registers,
    });
    this.skips = new Counter({ name: "scq_run_skips_total", help: "Runs skipped, by skip_reason", labelNames: ["reason"], registers });
    this.failures = new Counter({
      name: "scq_run_failures_total",
      help: "Runs that did not end ok and were not skipped, by failure_reason",
      labelNames: ["reason"],
      registers,
    });
    this.drafts = new Counter({
      name: "scq_margot_drafts_total",
      help: `Margot drafts by outcome (${DRAFT_OUTCOMES.join(", ")})`,
      labelNames: ["outcome"],
      registers,
    });
    this.intents = new Counter({ name: "scq_margot_intents_total", help: "Margot research completions decided, by status", labelNames: ["status"], registers });
    this.finished = new Counter({
      name: "scq_jobs_finished_total",
      help: "Jobs that reached completed or failed, by queue (scq_queue_jobs counts the ones still kept; these only go up)",
      labelNames: ["queue", "state"],
      registers,
    });
    this.tokens = new Counter({
      name: "scq_agent_tokens_total",
      help: "Tokens finished runs' agents reported, by agent and kind (input, output, cache_read, cache_creation)",
      labelNames: ["agent", "kind"],
      registers,
    });
    for (const agent of AGENTS) for (const kind of Object.keys(TOKEN_KINDS)) this.tokens.inc({ agent, kind }, 0);
    this.egress = new Counter({
      name: "scq_egress_connections_total",
      help: "Connections finished runs' containers asked the egress proxy for, by decision (allowed, denied)",
      labelNames: ["decision"],
      registers,
    });
    for (const decision of ["allowed", "denied"]) this.egress.inc({ decision }, 0);
    for (const status of RUN_STATUSES) if (status !== "skipped") this.runDuration.zero({ status });
    for (const reason of SKIP_REASONS) this.skips.inc({ reason }, 0);
    for (const reason of FAILURE_REASONS) this.failures.inc({ reason }, 0);
    for (const outcome of DRAFT_OUTCOMES) this.drafts.inc({ outcome }, 0);
    for (const status of IntentStatus.options) this.intents.inc({ status }, 0);
    for (const queue of queues.all) for (const state of FINISHED_STATES) this.finished.inc({ queue: queue.name, state }, 0);
    collectDefaultMetrics({ register: this.registry });
    // Gauges named like counters, which Prometheus' linter (promtool check metrics) refuses; their per-type
    // siblings (nodejs_active_handles{type}, …) carry the same numbers.
    for (const name of ["nodejs_active_handles_total", "nodejs_active_requests_total", "nodejs_active_resources_total"]) this.registry.removeSingleMetric(name);
  }

  /** A finished run's result, counted once; `agent`: its request's. */
  observeRun(result: SandcastleRunResult, agent = "unknown"): void {
    if (result.usage !== null) for (const [kind, field] of Object.entries(TOKEN_KINDS)) this.tokens.inc({ agent, kind }, result.usage[field]);
    if (result.egress !== null) {
      this.egress.inc({ decision: "allowed" }, result.egress.allowed);
      this.egress.inc({ decision: "denied" }, result.egress.denied);
    }
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
    const listen = (name: string) => new QueueEvents(name, { connection, prefix: this.deps.prefix });
    const runs = listen(this.deps.queues.sandcastleRun.name);
    const margot = listen(this.deps.queues.margotIntent.name);
    const retention = listen(this.deps.queues.sandboxRetention.name);
    this.events.push(runs, margot, retention);
    for (const e of this.events) {
      for (const state of FINISHED_STATES) e.on(state, () => this.finished.inc({ queue: e.name, state }));
    }
    const runQueue = this.deps.queues.sandcastleRun;
    const countRun = async (jobId: string) => {
      const job = await runQueue.getJob(jobId);
      const result = job ? await readRunResult(this.deps.redis, runQueue, job) : null;
      if (result) this.observeRun(result, typeof job?.data?.agent === "string" ? job.data.agent : "unknown");
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
