// `drafts list [--json]`, `drafts show DRAFT_ID [--json]`, `drafts react DRAFT_ID approve|reject|defer [--reason T]`:
// the local review channel (and a look at Telegram's drafts too: every draft lives in Redis).
import { randomUUID } from "node:crypto";
import { hostname, userInfo } from "node:os";
import { QueueEvents, type Job } from "bullmq";
import { enqueueReaction, MARGOT_INTENT_QUEUE } from "../../../queues/index.js";
import { AppError } from "../../errors.js";
import type { ReactionResult } from "../../margot/bridge/bridge.js";
import { DraftRateLimit } from "../../margot/store/rate-limit.js";
import { bullConnection } from "../../redis/connect.js";
import { DraftStore, type Draft } from "../../margot/store/drafts.js";
import { reactionForEmoji, REACTIONS, type Reaction } from "../../review/reactions.js";
import type { Runtime } from "../runtime.js";

const DEFAULT_WAIT_S = 60;

/** What `drafts list --json` shows of a draft: everything but the body. */
export function draftSummary(d: Draft) {
  return {
    id: d.id,
    state: d.state,
    interaction_id: d.interaction_id,
    title: d.title,
    target_repo: d.target_repo,
    classification: d.classification,
    confidence: d.confidence,
    channel: d.channel,
    created_at: d.created_at,
    draft_number: d.draft_number,
    queued_at: d.queued_at,
    release_at: d.state === "queued" ? d.release_at : null,
    posted_at: d.posted_at,
    expires_at: d.state === "posted" ? d.expires_at : null,
    resurface_at: d.state === "deferred" ? d.resurface_at : null,
    decided_at: d.decided_at,
    decided_by: d.decided_by,
    reject_reason: d.reject_reason,
    linear_issue_identifier: d.linear_issue_identifier,
    linear_issue_url: d.linear_issue_url,
  };
}

function when(d: Draft): string {
  switch (d.state) {
    case "queued":
      return `queued by the rate limit (draft ${d.draft_number ?? "?"}), posts at ${d.release_at}`;
    case "posted":
      return `waiting for a reaction, expires ${d.expires_at}`;
    case "deferred":
      return `deferred, comes back at ${d.resurface_at}`;
    case "approved":
      return `approved ${d.decided_at} by ${d.decided_by}${d.linear_issue_identifier ? ` → ${d.linear_issue_identifier}` : " (Linear issue pending)"}`;
    case "rejected":
      return `rejected ${d.decided_at} by ${d.decided_by}${d.reject_reason ? `: ${d.reject_reason}` : ""}`;
    case "expired":
      return `expired ${d.decided_at}`;
    default:
      return d.state;
  }
}

export async function draftsListCommand(rt: Runtime, opts: { json?: boolean }): Promise<number> {
  const { config } = rt;
  const store = new DraftStore(rt.redis, config.SCQ_KEY_PREFIX);
  const limit = new DraftRateLimit(rt.redis, config.SCQ_KEY_PREFIX, config.MARGOT_RATE_LIMIT_MAX, config.MARGOT_RATE_WINDOW_SECONDS * 1000);
  const [drafts, notices, inWindow, waiting] = await Promise.all([store.list(200), store.notices(20), limit.inWindow(), limit.waiting()]);
  const rateLimit = { max: limit.max, window_seconds: config.MARGOT_RATE_WINDOW_SECONDS, in_window: inWindow, waiting };
  if (opts.json) {
    process.stdout.write(`${JSON.stringify({ drafts: drafts.map(draftSummary), notices, rate_limit: rateLimit })}\n`);
    return 0;
  }
  if (drafts.length === 0) process.stdout.write("no drafts\n");
  for (const d of drafts) {
    process.stdout.write(
      `${d.id}  ${d.state.padEnd(8)}  ${d.title}\n    ${when(d)}; repo ${d.target_repo ?? "(to confirm)"}; interaction ${d.interaction_id}\n`,
    );
  }
  process.stdout.write(`rate limit: ${inWindow} of ${limit.max} drafts in the last ${config.MARGOT_RATE_WINDOW_SECONDS} s, ${waiting} waiting\n`);
  if (notices.length > 0) {
    process.stdout.write("recent notices:\n");
    for (const n of notices) process.stdout.write(`  ${n.at}  ${n.text}\n`);
  }
  return 0;
}

export async function draftsShowCommand(rt: Runtime, draftId: string, opts: { json?: boolean }): Promise<number> {
  const draft = await new DraftStore(rt.redis, rt.config.SCQ_KEY_PREFIX).get(draftId);
  if (!draft) throw new AppError("invalid_input", `no draft ${draftId} (see \`drafts list\`)`);
  if (opts.json) process.stdout.write(`${JSON.stringify({ ...draftSummary(draft), body: draft.body })}\n`);
  else process.stdout.write(`${draft.id}  ${draft.state}: ${when(draft)}\n\n${draft.body}\n`);
  return 0;
}

function readReaction(word: string): Reaction {
  const lower = word.trim().toLowerCase();
  const known = (REACTIONS as readonly string[]).includes(lower) ? (lower as Reaction) : reactionForEmoji(word);
  if (!known) throw new AppError("invalid_input", `unknown reaction "${word}": takes approve, reject or defer`);
  return known;
}

export async function draftsReactCommand(rt: Runtime, draftId: string, word: string, opts: { reason?: string; waitTimeout?: number }): Promise<number> {
  const reaction = readReaction(word);
  const store = new DraftStore(rt.redis, rt.config.SCQ_KEY_PREFIX);
  if (!(await store.get(draftId))) throw new AppError("invalid_input", `no draft ${draftId} (see \`drafts list\`)`);
  if (opts.reason !== undefined && reaction !== "reject") throw new AppError("invalid_input", "--reason goes with reject only");

  const bull = bullConnection(rt.site.target);
  const events = new QueueEvents(MARGOT_INTENT_QUEUE, { connection: bull.connection, prefix: rt.config.SCQ_KEY_PREFIX });
  rt.shutdown.add("queue events", async () => {
    await events.close();
    await bull.close();
  });
  await events.waitUntilReady();
  const actor = `cli:${safeUser()}@${hostname()}`;
  const { jobId } = await enqueueReaction(
    rt.queues.margotIntent,
    { draft_id: draftId, reaction, reason: opts.reason ?? null, actor, source: "cli" },
    `react-cli-${randomUUID()}`,
  );
  const job = (await rt.queues.margotIntent.getJob(jobId)) as Job | undefined;
  if (!job) throw new AppError("invalid_input", `reaction job ${jobId} vanished before it could be awaited`);
  const waitS = opts.waitTimeout ?? DEFAULT_WAIT_S;
  let result: ReactionResult;
  try {
    result = (await job.waitUntilFinished(events, waitS * 1000)) as ReactionResult;
  } catch (err) {
    const message = (err as Error).message;
    if (/timed out/i.test(message)) {
      process.stderr.write(
        `sandcastle-queue: no worker applied the reaction within ${waitS} s (is \`sandcastle-queue start\` or \`worker\` running?); it stays queued as job ${jobId} and applies when a worker runs\n`,
      );
    } else {
      process.stderr.write(`sandcastle-queue: reaction failed: ${message}\n`);
    }
    return 1;
  }
  process.stdout.write(`${JSON.stringify(result)}\n`);
  if (!result.changed) {
    process.stderr.write(`sandcastle-queue: ${result.message}\n`);
    return 1;
  }
  return 0;
}

function safeUser(): string {
  try {
    return userInfo().username;
  } catch {
    return "unknown";
  }
}
