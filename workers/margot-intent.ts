// Thin processor for margot-intent: validate the payload, then hand it to the bridge (src/margot),
// which drafts through the review channel (src/review) and creates Linear issues (src/linear).
import { DelayedError, UnrecoverableError, type Job } from "bullmq";
import type { z } from "zod";
import {
  cancelDraftExpire,
  DraftReactionJob,
  DraftTimerJob,
  MARGOT_INTENT_QUEUE,
  MARGOT_JOBS,
  MargotResearchCompletion,
  RateLimitReleaseJob,
  scheduleDraftExpire,
  scheduleDraftResurface,
  scheduleHoldRelease,
  scheduleRateLimitRelease,
} from "../queues/index.js";
import type { Config } from "../src/config.js";
import { formatIssues, parseWithWording } from "../src/invalid-input.js";
import { LinearGraphQL } from "../src/linear/graphql.js";
import { LinearIssues } from "../src/linear/issues.js";
import { LocalIssues } from "../src/linear/local-issues.js";
import { jobLogger, type Logger } from "../src/log.js";
import { MargotBridge, type DraftTimers } from "../src/margot/bridge/bridge.js";
import { IntentStore } from "../src/margot/store/intents.js";
import { FollowUpLog } from "../src/margot/store/follow-ups.js";
import { MargotLedger } from "../src/margot/store/ledger.js";
import { projectsLoader } from "../src/margot/projects-file.js";
import { DraftRateLimit } from "../src/margot/store/rate-limit.js";
import { DraftStore } from "../src/margot/store/drafts.js";
import { LocalReviewChannel } from "../src/review/local-channel.js";
import type { ReviewChannel } from "../src/review/review-channel.js";
import { TelegramReviewChannel } from "../src/review/telegram-channel.js";
import type { QueueWorkerSpec, WorkerDeps } from "./deps.js";

export function reviewChannelFor(config: Config, log: Logger): ReviewChannel {
  if (config.reviewChannel === "telegram" && config.TELEGRAM_BOT_TOKEN && config.REVIEW_CHAT_ID) {
    return new TelegramReviewChannel({ apiBase: config.TELEGRAM_API_BASE, token: config.TELEGRAM_BOT_TOKEN, chatId: config.REVIEW_CHAT_ID, log });
  }
  return new LocalReviewChannel(log);
}

function parse<S extends z.ZodType>(schema: S, job: Job, what: string): z.infer<S> {
  const parsed = parseWithWording(schema, job.data);
  if (!parsed.success) throw new UnrecoverableError(`invalid margot-intent ${what}: ${formatIssues(parsed.error)}`);
  return parsed.data;
}

export async function createMargotIntentWorker(deps: WorkerDeps): Promise<QueueWorkerSpec> {
  const { config, log } = deps;
  const prefix = config.SCQ_KEY_PREFIX;
  const queue = deps.queues.margotIntent;
  const ledger = new MargotLedger(config.MARGOT_LEDGER_PATH);
  const followUps = new FollowUpLog(config.MARGOT_FOLLOW_UP_PATH);
  const channel = reviewChannelFor(config, log);
  const localIssues = config.LINEAR_LOCAL_FILE
    ? new LocalIssues({ path: config.LINEAR_LOCAL_FILE, redis: deps.redis, prefix, team: config.LINEAR_TEAM_ID, log })
    : null;
  const issues =
    localIssues ??
    (config.LINEAR_API_KEY
      ? new LinearIssues({
          client: new LinearGraphQL({ url: config.LINEAR_API_URL, apiKey: config.LINEAR_API_KEY, timeoutMs: config.LINEAR_TIMEOUT_MS, log }),
          team: config.LINEAR_TEAM_ID,
          log,
        })
      : null);
  if (localIssues)
    log.warn({ path: config.LINEAR_LOCAL_FILE }, "the local mode (LINEAR_LOCAL_FILE): approved Margot drafts become issues in that file, not in Linear");
  else if (!issues)
    log.warn("LINEAR_API_KEY is not set: approved Margot drafts cannot become Linear issues (LINEAR_LOCAL_FILE tries approvals without Linear)");
  const timers: DraftTimers = {
    scheduleExpire: (id, generation, at) => scheduleDraftExpire(queue, id, generation, at),
    cancelExpire: async (id, generation) => {
      await cancelDraftExpire(queue, id, generation).catch((err: Error) =>
        log.warn({ draft_id: id, err: err.message }, "could not remove an expiry job; it will find the draft decided"),
      );
    },
    scheduleResurface: (id, generation, at) => scheduleDraftResurface(queue, id, generation, at),
    scheduleRelease: (id, at) => scheduleRateLimitRelease(queue, id, at),
    scheduleHold: (id, at) => scheduleHoldRelease(queue, id, at),
  };
  const bridge = new MargotBridge({
    intents: new IntentStore(deps.redis, prefix),
    drafts: new DraftStore(deps.redis, prefix),
    rateLimit: new DraftRateLimit(deps.redis, prefix, config.MARGOT_RATE_LIMIT_MAX, config.MARGOT_RATE_WINDOW_SECONDS * 1000),
    ledger,
    followUps,
    audit: deps.audit,
    channel,
    issues,
    timers,
    killSwitch: deps.killSwitch,
    projects: projectsLoader(config.PROJECTS_CONFIG_PATH, log),
    settings: {
      expiryMs: config.MARGOT_DRAFT_EXPIRY_SECONDS * 1000,
      deferMs: config.MARGOT_DEFER_SECONDS * 1000,
      suppressMs: config.MARGOT_SUPPRESS_SECONDS * 1000,
      destructiveVerbs: config.destructiveVerbs,
      pii: { internal_hosts: [...config.internalHosts], customer_names: [...config.customerNames], vendor_names: [...config.vendorNames] },
    },
    log,
  });
  log.info({ channel: channel.kind }, "margot review channel");

  const run = async (job: Job, token: string | undefined): Promise<unknown> => {
    const id = String(job.id);
    switch (job.name) {
      case MARGOT_JOBS.researchCompleted: {
        const completion = parse(MargotResearchCompletion, job, "completion");
        const result = await bridge.processCompletion(completion, `${id}@${job.timestamp}`);
        if (log.isLevelEnabled("info"))
          jobLogger(log, { queue: MARGOT_INTENT_QUEUE, jobId: id }).info(
            { interaction_id: completion.interaction_id, status: result.status, reason: result.reason, draft_id: result.draft_id },
            "margot intent decided",
          );
        return result;
      }
      case MARGOT_JOBS.draftReaction: {
        const r = parse(DraftReactionJob, job, "reaction");
        return bridge.react({ draft_id: r.draft_id, reaction: r.reaction, reason: r.reason, actor: r.actor, source: r.source, token: id });
      }
      case MARGOT_JOBS.draftExpire: {
        const t = parse(DraftTimerJob, job, "expiry");
        return bridge.expire(t.draft_id, t.generation, id);
      }
      case MARGOT_JOBS.draftResurface: {
        const t = parse(DraftTimerJob, job, "resurface");
        const result = await bridge.resurface(t.draft_id, t.generation, id);
        if (result.retry_at !== undefined && token) {
          // The kill switch holds it: look again later, same job.
          await job.moveToDelayed(result.retry_at, token);
          throw new DelayedError();
        }
        return result;
      }
      case MARGOT_JOBS.rateLimitRelease: {
        const t = parse(RateLimitReleaseJob, job, "rate-limit release");
        const result = await bridge.releaseQueued(t.draft_id, id);
        if (result.retry_at !== undefined && token) {
          // Someone else took the freed slot, or the kill switch holds it: wait, same job.
          await job.moveToDelayed(result.retry_at, token);
          throw new DelayedError();
        }
        return result;
      }
      default:
        throw new UnrecoverableError(`unknown margot-intent job name "${job.name}"`);
    }
  };

  return {
    name: MARGOT_INTENT_QUEUE,
    // A completion waits for three durable commits in a row (claim, ledger row, BullMQ's completion): many in flight (ADR 0025).
    concurrency: config.MARGOT_CONCURRENCY,
    processor: async (job, token) => {
      try {
        return await run(job, token);
      } catch (err) {
        // A failure retrying cannot fix (bad token, missing Linear state, no API key) fails the job at once.
        if (err instanceof Error && (err as { retryable?: unknown }).retryable === false && !(err instanceof UnrecoverableError)) {
          throw new UnrecoverableError(err.message);
        }
        throw err;
      }
    },
    close: async () => {
      await ledger.close();
      await followUps.close();
      await localIssues?.close();
    },
  };
}
