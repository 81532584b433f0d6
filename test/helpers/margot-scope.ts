// A sandcastle-queue deployment for Margot tests: its own key prefix, ledger, audit log, projects
// file, fake Telegram and fake Linear, and real worker/service processes on the shared Redis.
import { copyFileSync, existsSync, readFileSync } from "node:fs";
import { join, resolve } from "node:path";
import { Queue, QueueEvents, type Job } from "bullmq";
import { enqueueResearchCompletion, MARGOT_INTENT_QUEUE } from "../../queues/margot-intent.js";
import { parseJsonl } from "../../src/audit/jsonl-appender.js";
import type { MargotIntentResult } from "../../src/margot/contract.js";
import { DraftStore, type Draft } from "../../src/margot/store/drafts.js";
import { afterEach, beforeEach } from "vitest";
import { CliProcess, cliEnv, stopAllCli, waitFor } from "./cli.js";
import { FakeLinear } from "./fake-linear.js";
import { FakeTelegram } from "./fake-telegram.js";
import type { RedisClient } from "../../src/redis/connect.js";
import { sharedRedis, tempDir, uniquePrefix, type RedisBackend } from "./scope.js";

export const FIXTURES = resolve(import.meta.dirname, "../fixtures/margot");
export const WEBHOOK_SECRET = "webhook-secret_0123456789abcdef";

/** Action-shaped, allowed repo (RestoreAssist), no destructive verbs. */
export const ACTION_BODY =
  "RestoreAssist's Stripe webhook handler (app/api/stripe/webhook/route.ts) processes invoice.paid events without checking event.id. " +
  "We should add idempotency to the Stripe webhook handler in CleanExpo/RestoreAssist by recording processed event ids in a table with a unique constraint, " +
  "so that duplicate deliveries stop producing double credits (target: 0 double-credited accounts per month).";

export const INFORMATIONAL_BODY =
  "What's the latest on the Next.js 15 release? The release notes describe a new caching default, React 19 support and faster builds. " +
  "Several teams report smoother upgrades than with version 14. Nothing in the notes affects our projects directly.";

let seq = 0;

export class MargotScope {
  readonly prefix = uniquePrefix();
  readonly dir = tempDir("scqm");
  readonly ledgerPath = join(this.dir.path, "margot_intents.jsonl");
  readonly followUpPath = join(this.dir.path, "margot_follow_ups.jsonl");
  readonly auditPath = join(this.dir.path, "audit.jsonl");
  readonly projectsPath = join(this.dir.path, "projects.json");
  readonly completePath = join(this.dir.path, "margot_complete.jsonl");
  readonly redis: RedisClient;
  readonly queue: Queue;
  readonly drafts: DraftStore;
  readonly telegram = new FakeTelegram();
  readonly linear = new FakeLinear();
  private events: QueueEvents | null = null;
  private eventsConnection: RedisClient | null = null;
  baseUrl = "";

  constructor(readonly backend: RedisBackend = sharedRedis()) {
    this.redis = backend.client();
    this.queue = new Queue(MARGOT_INTENT_QUEUE, { connection: this.redis, prefix: this.prefix });
    this.drafts = new DraftStore(this.redis, this.prefix);
    copyFileSync(join(FIXTURES, "projects.json"), this.projectsPath);
  }

  async start(): Promise<this> {
    await Promise.all([this.telegram.start(), this.linear.start()]);
    return this;
  }

  /** Telegram review channel, Linear, seconds-long timers (override any of it). */
  env(extra: Record<string, string | undefined> = {}): NodeJS.ProcessEnv {
    return cliEnv({
      ...this.backend.env,
      SCQ_KEY_PREFIX: this.prefix,
      AUDIT_LOG_PATH: this.auditPath,
      MARGOT_LEDGER_PATH: this.ledgerPath,
      MARGOT_FOLLOW_UP_PATH: this.followUpPath,
      PROJECTS_CONFIG_PATH: this.projectsPath,
      RUNS_DIR: join(this.dir.path, "runs"),
      SCQ_LOCK_DURATION_MS: "3000",
      SCQ_STALLED_INTERVAL_MS: "1000",
      SCQ_SHUTDOWN_GRACE_SECONDS: "5",
      TELEGRAM_BOT_TOKEN: this.telegram.token,
      REVIEW_CHAT_ID: this.telegram.chatId,
      TELEGRAM_API_BASE: this.telegram.url,
      TELEGRAM_WEBHOOK_SECRET: WEBHOOK_SECRET,
      LINEAR_API_KEY: this.linear.apiKey,
      LINEAR_API_URL: this.linear.url,
      LINEAR_TEAM_ID: "RA",
      LINEAR_TIMEOUT_MS: "1500",
      MARGOT_CUSTOMER_NAMES: "Acme Plumbing",
      MARGOT_VENDOR_NAMES: "Bluestone Payments",
      MARGOT_INTERNAL_HOSTS: "*.corp.example.com",
      PORT: "0",
      ...extra,
    });
  }

  /** Telegram off: drafts go to the local channel. */
  localEnv(extra: Record<string, string | undefined> = {}): NodeJS.ProcessEnv {
    return this.env({ TELEGRAM_BOT_TOKEN: undefined, REVIEW_CHAT_ID: undefined, ...extra });
  }

  async worker(env: NodeJS.ProcessEnv = this.env()): Promise<CliProcess> {
    const w = new CliProcess(["worker"], env);
    await w.waitForOutput(/workers running/);
    return w;
  }

  /** Workers + HTTP (for the Telegram webhook); sets baseUrl. */
  async service(env: NodeJS.ProcessEnv = this.env()): Promise<CliProcess> {
    const s = new CliProcess(["start"], env);
    await s.waitForOutput(/Bull Board at (http:\/\/\S+)\/admin\/queues/);
    this.baseUrl = /Bull Board at (http:\/\/\S+)\/admin\/queues/.exec(s.stdout)![1]!;
    await s.waitForOutput(/workers \+ http running/);
    return s;
  }

  completion(body: string, id?: string): { interaction_id: string; body: string; originated_at: string; originating_session_id: string } {
    seq += 1;
    return {
      interaction_id: id ?? `int-${process.pid}-${Date.now().toString(36)}-${seq}`,
      body,
      originated_at: "2026-09-17T03:04:05Z",
      originating_session_id: `sess-${seq}`,
    };
  }

  private async queueEvents(): Promise<QueueEvents> {
    if (!this.events) {
      this.eventsConnection = this.backend.client();
      this.events = new QueueEvents(MARGOT_INTENT_QUEUE, { connection: this.eventsConnection, prefix: this.prefix });
      await this.events.waitUntilReady();
    }
    return this.events;
  }

  /** Enqueue a completion (as producers do) and wait for its MargotIntentResult. */
  async submit(completion: Record<string, string>, timeoutMs = 30_000): Promise<MargotIntentResult> {
    const events = await this.queueEvents();
    const { jobId } = await enqueueResearchCompletion(this.queue, completion);
    const job = (await this.queue.getJob(jobId)) as Job;
    return (await job.waitUntilFinished(events, timeoutMs)) as MargotIntentResult;
  }

  async waitJob(jobId: string, timeoutMs = 30_000): Promise<unknown> {
    const events = await this.queueEvents();
    await waitFor(
      async () => (await this.queue.getJob(jobId)) !== undefined,
      timeoutMs,
      () => `job ${jobId} to exist`,
    );
    const job = (await this.queue.getJob(jobId)) as Job;
    return job.waitUntilFinished(events, timeoutMs);
  }

  async draft(id: string): Promise<Draft> {
    const d = await this.drafts.get(id);
    if (!d) throw new Error(`no draft ${id}`);
    return d;
  }

  async waitState(id: string, state: Draft["state"], timeoutMs = 20_000): Promise<Draft> {
    await waitFor(
      async () => (await this.drafts.get(id))?.state === state,
      timeoutMs,
      () => `draft ${id} to be ${state}`,
    );
    return this.draft(id);
  }

  async webhook(
    body: unknown,
    headers: Record<string, string> = { "x-telegram-bot-api-secret-token": WEBHOOK_SECRET },
  ): Promise<{ status: number; json: unknown }> {
    const res = await fetch(`${this.baseUrl}/telegram/webhook`, {
      method: "POST",
      headers: { "content-type": "application/json", ...headers },
      body: typeof body === "string" ? body : JSON.stringify(body),
    });
    const text = await res.text();
    let json: unknown = null;
    try {
      json = JSON.parse(text);
    } catch {
      json = text;
    }
    return { status: res.status, json };
  }

  followUpRows(): Array<Record<string, unknown>> {
    return parseJsonl(existsSync(this.followUpPath) ? readFileSync(this.followUpPath, "utf8") : "") as Array<Record<string, unknown>>;
  }

  auditRows(): Array<Record<string, unknown>> {
    return parseJsonl(existsSync(this.auditPath) ? readFileSync(this.auditPath, "utf8") : "") as Array<Record<string, unknown>>;
  }

  auditTypes(interactionId?: string): string[] {
    return this.auditRows()
      .filter((r) => interactionId === undefined || r.interaction_id === interactionId)
      .map((r) => String(r.type));
  }

  ledgerRows(interactionId?: string): Array<Record<string, unknown>> {
    const rows = parseJsonl(existsSync(this.ledgerPath) ? readFileSync(this.ledgerPath, "utf8") : "") as Array<Record<string, unknown>>;
    return rows.filter((r) => interactionId === undefined || r.interaction_id === interactionId);
  }

  async close(): Promise<void> {
    await this.events?.close();
    this.eventsConnection?.disconnect();
    await this.queue.close();
    this.redis.disconnect();
    await Promise.all([this.telegram.stop(), this.linear.stop()]);
    await this.backend.deletePrefix(this.prefix);
    this.dir.remove();
  }
}

/** One fresh MargotScope per test (started before, stopped with every CLI process after). */
export function useMargotScope(set: (scope: MargotScope) => void): void {
  let current: MargotScope | undefined;
  beforeEach(async () => {
    current = await new MargotScope().start();
    set(current);
  });
  afterEach(async () => {
    await stopAllCli();
    await current?.close();
  });
}
