// The MARGOT_COMPLETE_PATH tailer: each completion enqueued exactly once across restarts,
// rotation and truncation; a torn last line waits for its newline; a malformed line is skipped
// with a logged reason and never stops it. In-process on the real Redis, plus one run through
// a real `worker` process.
import { appendFileSync, renameSync, truncateSync, writeFileSync } from "node:fs";
import { Writable } from "node:stream";
import { Queue } from "bullmq";
import { Redis } from "ioredis";
import { pino } from "pino";
import { afterEach, beforeEach, describe, expect, it } from "vitest";
import { enqueueResearchCompletion, MARGOT_INTENT_QUEUE } from "../../../queues/margot-intent.js";
import { CompletionTailer } from "../../../src/margot/bridge/completion-tailer.js";
import type { MargotResearchCompletion } from "../../../src/margot/contract.js";
import { runCli, waitFor } from "../../helpers/cli.js";
import { INFORMATIONAL_BODY, type MargotScope, useMargotScope } from "../../helpers/margot-scope.js";
import { deletePrefix, redisUrl, tempDir, uniquePrefix } from "../../helpers/scope.js";

const line = (id: string) =>
  `${JSON.stringify({ interaction_id: id, body: INFORMATIONAL_BODY, originated_at: "2026-09-17T03:04:05Z", originating_session_id: "s-1" })}\n`;

describe("completion tailer (in-process)", () => {
  let prefix: string;
  let dir: ReturnType<typeof tempDir>;
  let path: string;
  let redis: Redis;
  let queue: Queue;
  let logs: Array<Record<string, unknown>>;
  let tailers: CompletionTailer[];

  beforeEach(() => {
    prefix = uniquePrefix();
    dir = tempDir("scqt");
    path = `${dir.path}/margot_complete.jsonl`;
    redis = new Redis(redisUrl());
    queue = new Queue(MARGOT_INTENT_QUEUE, { connection: redis, prefix });
    logs = [];
    tailers = [];
  });
  afterEach(async () => {
    for (const t of tailers) await t.stop();
    await queue.close();
    redis.disconnect();
    await deletePrefix(redisUrl(), prefix);
    dir.remove();
  });

  /** Every enqueue call is recorded (calls), and goes to the real queue (jobs). */
  const calls: string[] = [];
  function tailer(): CompletionTailer {
    const sink = new Writable({
      write(chunk: Buffer, _enc, cb) {
        for (const l of chunk.toString().split("\n").filter(Boolean)) logs.push(JSON.parse(l) as Record<string, unknown>);
        cb();
      },
    });
    const t = new CompletionTailer({
      redis,
      prefix,
      path,
      pollMs: 30,
      log: pino({ level: "info" }, sink),
      enqueue: async (c: MargotResearchCompletion) => {
        calls.push(c.interaction_id);
        await enqueueResearchCompletion(queue, c);
      },
    });
    tailers.push(t);
    t.start();
    return t;
  }
  const jobIds = async () => (await queue.getJobs(["waiting", "delayed", "active", "completed", "failed"])).map((j) => String(j.id)).sort();

  beforeEach(() => {
    calls.length = 0;
  });

  it("enqueues each line once; a restart resumes at the saved offset (nothing re-read, new lines picked up)", async () => {
    writeFileSync(path, line("a-1") + line("a-2"));
    const t = tailer();
    await waitFor(() => t.stats.enqueued === 2, 5000);
    await t.stop();
    appendFileSync(path, line("a-3"));
    const t2 = tailer();
    await waitFor(() => t2.stats.enqueued === 1, 5000);
    appendFileSync(path, line("a-4"));
    await waitFor(() => t2.stats.enqueued === 2, 5000);
    expect(calls).toEqual(["a-1", "a-2", "a-3", "a-4"]);
    expect(await jobIds()).toEqual(["intent-a-1", "intent-a-2", "intent-a-3", "intent-a-4"]);
  });

  it("a torn last line waits for its newline", async () => {
    const full = line("torn-1");
    writeFileSync(path, line("t-0") + full.slice(0, 40));
    const t = tailer();
    await waitFor(() => t.stats.enqueued === 1, 5000);
    // Several passes (every 30 ms) go by: the half line is neither taken nor skipped.
    await new Promise((r) => setTimeout(r, 300));
    expect(t.stats).toEqual({ enqueued: 1, skipped: 0 });
    appendFileSync(path, full.slice(40));
    await waitFor(() => t.stats.enqueued === 2, 5000);
    expect(calls).toEqual(["t-0", "torn-1"]);
  });

  it("a malformed line is skipped with a logged reason; the lines after it still go through", async () => {
    writeFileSync(
      path,
      line("m-1") +
        "this is not json\n" +
        `${JSON.stringify({ interaction_id: "m-bad", body: "" })}\n` +
        `${JSON.stringify({ interaction_id: "has:colon", body: "x", originated_at: "2026-09-17T03:04:05Z", originating_session_id: "s" })}\n` +
        line("m-2"),
    );
    const t = tailer();
    await waitFor(() => t.stats.enqueued === 2 && t.stats.skipped === 3, 5000);
    expect(calls).toEqual(["m-1", "m-2"]);
    const skipped = logs.filter((l) => l.msg === "skipped a line of the Margot completion file");
    expect(skipped.map((l) => l.reason)).toEqual([
      expect.stringMatching(/^not JSON/),
      expect.stringMatching(/^not a MargotResearchCompletion: .*body/),
      expect.stringMatching(/interaction_id must not contain ':'/),
    ]);
    expect(skipped.every((l) => typeof l.offset === "number")).toBe(true);
    // The content of a skipped line is never logged (research bodies carry PII).
    expect(JSON.stringify(logs)).not.toContain("this is not json");
  });

  it("rotation while tailing: the old file is finished, the new one read from its start", async () => {
    writeFileSync(path, line("r-1"));
    const t = tailer();
    await waitFor(() => t.stats.enqueued === 1, 5000);
    await t.stop();
    // Lines land in the old file, then it is rotated away, while a tailer holds it open.
    const t2 = tailer();
    appendFileSync(path, line("r-2"));
    await waitFor(() => t2.stats.enqueued === 1, 5000);
    appendFileSync(path, line("r-3"));
    renameSync(path, `${path}.1`);
    writeFileSync(path, line("r-4") + line("r-5"));
    // A call is counted as it starts: its job is there once the enqueue has returned.
    await waitFor(async () => calls.length === 5 && (await jobIds()).length === 5, 5000, () => `5 jobs (calls: ${calls.join(", ")})`);
    expect([...calls].sort()).toEqual(["r-1", "r-2", "r-3", "r-4", "r-5"]);
    expect(await jobIds()).toHaveLength(5);
  });

  it("rotation while no tailer ran: the rest of <path>.1 first, then the new file; truncation reads from 0", async () => {
    writeFileSync(path, line("o-1"));
    const t = tailer();
    await waitFor(() => t.stats.enqueued === 1, 5000);
    await t.stop();
    appendFileSync(path, line("o-2"));
    renameSync(path, `${path}.1`);
    writeFileSync(path, line("o-3"));
    const t2 = tailer();
    await waitFor(() => t2.stats.enqueued === 2, 5000);
    expect(calls).toEqual(["o-1", "o-2", "o-3"]);

    truncateSync(path, 0);
    await new Promise((r) => setTimeout(r, 200));
    writeFileSync(path, line("o-4"));
    await waitFor(() => t2.stats.enqueued === 3, 5000);
    expect(calls).toEqual(["o-1", "o-2", "o-3", "o-4"]);
    expect(logs.some((l) => /truncated/.test(String(l.msg)))).toBe(true);
  });

  it("a line re-read after a crash (offset not yet saved) is still one job", async () => {
    writeFileSync(path, line("c-1") + line("c-2"));
    const t = tailer();
    await waitFor(() => t.stats.enqueued === 2, 5000);
    await t.stop();
    await redis.del(...(await redis.keys(`${prefix}:margot:tail:*`)));
    const t2 = tailer();
    await waitFor(() => t2.stats.enqueued === 2, 5000);
    expect(calls).toEqual(["c-1", "c-2", "c-1", "c-2"]);
    expect(await jobIds()).toEqual(["intent-c-1", "intent-c-2"]);
  });
});

describe("completion tailer in a worker process", () => {
  let s: MargotScope;
  useMargotScope((scope) => (s = scope));

  it("`worker` with MARGOT_COMPLETE_PATH enqueues each completion once, across a restart", async () => {
    const env = s.localEnv({ MARGOT_COMPLETE_PATH: s.completePath, MARGOT_COMPLETE_POLL_MS: "50" });
    writeFileSync(s.completePath, line("w-1") + line("w-2"));
    const w = await s.worker(env);
    await waitFor(() => s.ledgerRows().length === 2, 15_000);
    await w.stop();
    appendFileSync(s.completePath, line("w-3"));
    await s.worker(env);
    await waitFor(() => s.ledgerRows().length === 3, 15_000);
    await new Promise((r) => setTimeout(r, 300));
    // Once each; w-1 and w-2 are processed concurrently (the margot worker runs 16 at a time), so order is not promised.
    expect(s.ledgerRows().map((r) => r.interaction_id).sort()).toEqual(["w-1", "w-2", "w-3"]);
    expect(s.auditTypes().filter((t) => t === "margot_intent_classified")).toHaveLength(3);
    const status = await runCli(["status", "--json"], env);
    expect(status.code).toBe(0);
  });
});
