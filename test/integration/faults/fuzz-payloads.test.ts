// Fault: hostile or broken payloads (fast-check, 1,000 each) at every door: queues/ (enqueue), the CLI, the
// HTTP API, and jobs written straight to Redis for the workers (sandcastle-run, and margot-intent under each job
// name). Guarantee: each is refused naming the field, nothing is enqueued at the doors, and the worker fails such a
// job alone and keeps serving.
import fc from "fast-check";
import { Queue } from "bullmq";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { enqueueResearchCompletion, enqueueRun, MARGOT_INTENT_QUEUE, MARGOT_JOB_OPTIONS, MARGOT_JOBS } from "../../../queues/index.js";
import { InvalidInputError } from "../../../src/errors.js";
import { badCompletion, badDraftReaction, badDraftTimer, badRateLimitRelease, badRunRequest, namesField, type BadPayload } from "../../helpers/bad-payloads.js";
import { CliProcess, runCli, stopAllCli, waitFor } from "../../helpers/cli.js";
import { ACTION_BODY, MargotScope } from "../../helpers/margot-scope.js";
import { RunScope } from "../../helpers/run-scope.js";

const TOKEN = "fuzz-token-0123456789abcdef";
const RUNS = 1000;

let s: RunScope;
let margot: Queue;
beforeAll(() => {
  s = new RunScope();
  margot = new Queue(MARGOT_INTENT_QUEUE, { connection: s.redis, prefix: s.prefix });
});
afterAll(async () => {
  await stopAllCli();
  await margot.close();
  await s.close();
});

const completion = { interaction_id: "int-fuzz-1", body: "Some research text.", originated_at: "2026-09-17T03:04:05Z", originating_session_id: "sess-fuzz" };
const nothingEnqueued = async () => {
  expect(await s.queue.count()).toBe(0);
  expect(await margot.count()).toBe(0);
};

describe("property: bad payloads are refused naming the field", () => {
  it("queues/: enqueueRun and enqueueResearchCompletion refuse 1,000 each with an InvalidInputError naming the field", async () => {
    const refuses = (enqueue: (payload: unknown) => Promise<unknown>) => async ({ field, payload }: BadPayload) => {
      const err = await enqueue(payload).then(() => null, (e: unknown) => e);
      expect(err, `accepted a payload bad in ${field}: ${JSON.stringify(payload)}`).toBeInstanceOf(InvalidInputError);
      expect(namesField((err as Error).message, field), `${(err as Error).message} does not name ${field}`).toBe(true);
    };
    await fc.assert(fc.asyncProperty(badRunRequest(s.request()), refuses((p) => enqueueRun(s.queue, p, { envManifestDir: s.manifestDir }))), { numRuns: RUNS });
    await fc.assert(fc.asyncProperty(badCompletion(completion), refuses((p) => enqueueResearchCompletion(margot, p))), { numRuns: RUNS });
    await nothingEnqueued();
  }, 120_000);

  it("HTTP: POST /v1/sandcastle-runs and /v1/margot-intents answer 400 with the field in problems, 1,000 each", async () => {
    const service = new CliProcess(["serve"], s.env({ PORT: "0", SCQ_API_TOKEN: TOKEN }));
    await service.waitForOutput(/Bull Board at (http:\/\/\S+)\/admin\/queues/);
    const base = /Bull Board at (http:\/\/\S+)\/admin\/queues/.exec(service.stdout)![1]!;
    const refuses = (path: string) => async ({ field, payload }: BadPayload) => {
      const res = await fetch(`${base}/v1/${path}`, {
        method: "POST",
        headers: { authorization: `Bearer ${TOKEN}`, "content-type": "application/json" },
        body: JSON.stringify(payload),
      });
      const body = (await res.json()) as { error: string; message: string; problems: Array<{ field: string; problem: string }> };
      expect(res.status, `${JSON.stringify(payload)} → ${JSON.stringify(body)}`).toBe(400);
      expect(body.error).toBe("invalid_request");
      expect(body.problems.some((p) => namesField(`${p.field}: ${p.problem}`, field)), `${JSON.stringify(body.problems)} does not name ${field}`).toBe(true);
    };
    await fc.assert(fc.asyncProperty(badRunRequest(s.request()), refuses("sandcastle-runs")), { numRuns: RUNS });
    await fc.assert(fc.asyncProperty(badCompletion(completion), refuses("margot-intents")), { numRuns: RUNS });
    await nothingEnqueued();
    expect(service.child.exitCode).toBeNull();
  }, 180_000);

  it("CLI: enqueue sandcastle-run refuses with one line naming the field (a sample: each is a process)", async () => {
    // The CLI resolves a relative path against its working directory (README), so those are not bad there.
    const cliBad = badRunRequest(s.request()).filter(
      ({ field, payload }) => !(["repo_workdir", "prompt_template_dir"].includes(field) && typeof (payload as Record<string, unknown>)[field] === "string"),
    );
    await fc.assert(
      fc.asyncProperty(cliBad, async ({ field, payload }) => {
        const res = await runCli(["enqueue", "sandcastle-run", "--request", "-"], s.env(), { input: JSON.stringify(payload) });
        expect(res.code, res.stdout).toBe(1);
        expect(res.stdout).toBe("");
        const lines = res.stderr.trim().split("\n");
        expect(lines).toHaveLength(1);
        expect(lines[0]).toMatch(/^sandcastle-queue: invalid sandcastle-run request: /);
        expect(namesField(lines[0]!, field), `${lines[0]} does not name ${field}`).toBe(true);
      }),
      { numRuns: 12 },
    );
    await nothingEnqueued();
  }, 180_000);

  it("worker: 1,000 bad jobs written straight to Redis each fail alone naming the field; the worker then runs a good one", async () => {
    const bad = fc.sample(badRunRequest(s.request()), RUNS);
    const jobs = await s.queue.addBulk(bad.map(({ payload }, i) => ({ name: "run", data: payload, opts: { jobId: `run-fuzz-${i}`, attempts: 1 } })));
    expect(jobs).toHaveLength(RUNS);
    const worker = new CliProcess(["worker"], s.env());
    await worker.waitForOutput(/workers running/);
    await waitFor(async () => (await s.queue.getFailedCount()) === RUNS, 120_000, () => `all ${RUNS} bad jobs to fail`);
    const failed = await s.queue.getFailed(0, RUNS);
    const unnamed = failed.filter(
      (job) =>
        !namesField(job.failedReason ?? "", bad[Number(String(job.id).slice("run-fuzz-".length))]!.field) ||
        !(job.failedReason ?? "").startsWith("invalid sandcastle-run request: "),
    );
    expect(unnamed.map((j) => [j.id, j.failedReason])).toEqual([]);
    expect(s.tally().size).toBe(0);

    const { runId } = await enqueueRun(s.queue, s.request({}, { FAKE_MODE: "ok" }), { envManifestDir: s.manifestDir });
    await waitFor(async () => (await s.queue.getJob(runId).then((j) => j?.getState())) === "completed", 30_000, () => "the good run to complete");
    expect(s.tally().get(runId)).toBe(1);
    expect(worker.child.exitCode).toBeNull();
  }, 240_000);

  it("worker: 1,000 bad margot-intent jobs (every job name it knows) written straight to Redis each fail alone, at once, naming the field; the worker then decides a good completion", async () => {
    const m = await new MargotScope().start();
    try {
      const draft = { draft_id: "d-0123456789ab" };
      // Each name with what its refusal calls the payload (workers/margot-intent.ts).
      const badJob = fc.oneof(
        badCompletion(completion).map((b) => ({ ...b, name: MARGOT_JOBS.researchCompleted, what: "completion" })),
        badDraftReaction({ ...draft, reaction: "approve", reason: null, actor: "telegram:4242", source: "telegram", update_id: 7 }).map((b) => ({
          ...b,
          name: MARGOT_JOBS.draftReaction,
          what: "reaction",
        })),
        badDraftTimer({ ...draft, generation: 0 }).map((b) => ({ ...b, name: MARGOT_JOBS.draftExpire, what: "expiry" })),
        badDraftTimer({ ...draft, generation: 0 }).map((b) => ({ ...b, name: MARGOT_JOBS.draftResurface, what: "resurface" })),
        badRateLimitRelease(draft).map((b) => ({ ...b, name: MARGOT_JOBS.rateLimitRelease, what: "rate-limit release" })),
      );
      const bad = fc.sample(badJob, RUNS);
      expect(new Set(bad.map((b) => b.name)).size).toBe(Object.keys(MARGOT_JOBS).length);
      // As producers add them: up to 5 attempts. A refusal is final, so each fails on its first.
      await m.queue.addBulk(bad.map(({ name, payload }, i) => ({ name, data: payload, opts: { ...MARGOT_JOB_OPTIONS, jobId: `m-fuzz-${i}` } })));
      const worker = await m.worker();
      // Settled: failed, or (were one taken as good or retried) completed or delayed.
      const settled = async () => m.queue.getJobCounts("failed", "completed", "delayed");
      await waitFor(
        async () => Object.values(await settled()).reduce((a, b) => a + b, 0) === RUNS,
        120_000,
        () => `all ${RUNS} bad jobs to be processed`,
      );
      expect(await settled()).toEqual({ failed: RUNS, completed: 0, delayed: 0 });
      const failed = await m.queue.getFailed(0, RUNS);
      const wrong = failed.filter((job) => {
        const { field, what } = bad[Number(String(job.id).slice("m-fuzz-".length))]!;
        const reason = job.failedReason ?? "";
        return !reason.startsWith(`invalid margot-intent ${what}: `) || !namesField(reason, field) || job.attemptsMade !== 1;
      });
      expect(wrong.map((j) => [j.id, j.name, j.attemptsMade, j.failedReason])).toEqual([]);
      expect(m.telegram.drafts()).toHaveLength(0);

      const result = await m.submit(m.completion(ACTION_BODY));
      expect(result.status).toBe("drafted");
      expect(m.telegram.drafts()).toHaveLength(1);
      expect(worker.child.exitCode).toBeNull();
    } finally {
      await stopAllCli();
      await m.close();
    }
  }, 240_000);
});
