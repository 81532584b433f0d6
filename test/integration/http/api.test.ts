// The HTTP API under /v1 and /metrics, through a real `start` process (workers + HTTP) on the shared test Redis,
// with the fake run child: every status code, idempotency, JSON Schemas that validate a real request, metrics.
import { spawnSync } from "node:child_process";
import { readFileSync } from "node:fs";
import { join, resolve } from "node:path";
import Ajv2020Module from "ajv/dist/2020.js";
import addFormatsModule from "ajv-formats";
import parsePrometheusTextFormat from "parse-prometheus-text-format";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { FAILURE_REASONS, IntentStatus, SKIP_REASONS } from "../../../src/audit/vocabulary.js";
import { API_BODY_LIMIT_BYTES } from "../../../src/http/api.js";
import { CliProcess, runCli, stopAllCli, waitFor } from "../../helpers/cli.js";
import { ACTION_BODY, MargotScope } from "../../helpers/margot-scope.js";
import { httpCaller, startService } from "../../helpers/http-service.js";
import { rawRequest } from "../../helpers/raw-http.js";
import { RunScope } from "../../helpers/run-scope.js";

const ADMIN = "api-admin-token-0123456789";
const PROVIDERS = resolve(import.meta.dirname, "../../fixtures/providers");
const VIEWER = "api-viewer-token-0123456789";
let s: RunScope;
let base: string;

beforeAll(async () => {
  s = new RunScope();
  ({ base } = await startService("start", s.env({ PORT: "0", SCQ_API_TOKEN: ADMIN, SCQ_VIEWER_TOKEN: VIEWER, SANDCASTLE_PROVIDERS_DIR: PROVIDERS })));
});
afterAll(async () => {
  await stopAllCli();
  await s.close();
});

const json = { "content-type": "application/json" };
const admin = { ...json, authorization: `Bearer ${ADMIN}` };
const viewer = { ...json, authorization: `Bearer ${VIEWER}` };

const call = httpCaller(() => base);

async function finished(queue: string, id: string): Promise<any> {
  let job: any;
  await waitFor(async () => {
    job = (await call("GET", `/v1/jobs/${queue}/${id}`, viewer)).body;
    return job.state === "completed" || job.state === "failed";
  }, 30_000, () => `job ${id} to finish (${JSON.stringify(job)})`);
  return job;
}

type Family = { name: string; type: string; metrics: Array<{ value?: string; labels?: Record<string, string>; buckets?: Record<string, string> }> };

/** GET /metrics of a service, parsed by a Prometheus text parser. */
async function scrape(url: string, headers: Record<string, string> = {}): Promise<{ res: Response; text: string; family(name: string): Family }> {
  const res = await fetch(`${url}/metrics`, { headers });
  const text = await res.text();
  const families = parsePrometheusTextFormat(text) as Family[];
  return { res, text, family: (name) => families.find((f) => f.name === name) ?? { name, type: "", metrics: [] } };
}

describe("POST /v1/sandcastle-runs", () => {
  it("201 with the job id; the job ends completed with its result, phase done", async () => {
    const res = await call("POST", "/v1/sandcastle-runs", admin, s.request({}, { FAKE_MODE: "ok" }));
    expect(res.status).toBe(201);
    expect(res.body).toMatchObject({ queue: "sandcastle-run", job_id: expect.stringMatching(/^run-/) });
    const job = await finished("sandcastle-run", res.body.job_id);
    expect(job).toMatchObject({ state: "completed", phase: "done", result: { status: "ok", run_id: res.body.job_id }, failure: null });
  });

  it("a run that does not end ok is a FAILED job, never retried, whose result the API still returns", async () => {
    const res = await call("POST", "/v1/sandcastle-runs", admin, s.request({}, { FAKE_MODE: "fail" }));
    const job = await finished("sandcastle-run", res.body.job_id);
    expect(job).toMatchObject({
      state: "failed",
      phase: "done",
      attempts_made: 1,
      result: { status: "failed", failure_reason: "agent_unavailable", message: "claude is not on PATH" },
    });
    expect(job.failure.reason).toBe("failed: agent_unavailable — claude is not on PATH");
  });

  it("400 with a list of {field, problem}; nothing is enqueued", async () => {
    const before = await s.queue.count();
    const res = await call("POST", "/v1/sandcastle-runs", admin, { ...s.request(), repo_workdir: "relative/x", parallel_implementers: 99, bogus: 1 });
    expect(res.status).toBe(400);
    expect(res.body.error).toBe("invalid_request");
    const fields = (res.body.problems as Array<{ field: string; problem: string }>).map((p) => p.field).sort();
    expect(fields).toEqual(["bogus", "parallel_implementers", "repo_workdir"]);
    expect(res.body.problems.find((p: { field: string }) => p.field === "repo_workdir").problem).toMatch(/absolute path/);
    const manifest = await call("POST", "/v1/sandcastle-runs", admin, s.request({ env_manifest_name: "missing" }));
    expect(manifest.status).toBe(400);
    expect(manifest.body.problems[0].field).toBe("env_manifest_name");
    const intruder = await call(
      "POST",
      "/v1/sandcastle-runs",
      admin,
      s.request({ prompt_template_dir: join(s.runsDir, "run-00000000-0000-4000-8000-000000000001", "job") }),
    );
    expect(intruder.status).toBe(400);
    expect(intruder.body.problems).toEqual([{ field: "prompt_template_dir", problem: expect.stringMatching(/ lies inside RUNS_DIR .*: retained run workspaces are never mounted into another run$/) }]);
    expect(await s.queue.count()).toBe(before);
  });

  it("a custom:<name> sandbox is found in SANDCASTLE_PROVIDERS_DIR as from the CLI: 201 for one that is there, 400 naming sandbox for one that is not", async () => {
    const found = await call("POST", "/v1/sandcastle-runs", admin, s.request({ sandbox: "custom:local-process" }));
    expect(found.status).toBe(201);
    expect((await finished("sandcastle-run", found.body.job_id)).state).toBe("completed");
    const before = await s.queue.count();
    const missing = await call("POST", "/v1/sandcastle-runs", admin, s.request({ sandbox: "custom:no-such-provider" }));
    expect(missing.status).toBe(400);
    expect(missing.body.problems).toEqual([{ field: "sandbox", problem: expect.stringContaining("no-such-provider") }]);
    expect(await s.queue.count()).toBe(before);
  });

  it("401 without or with a wrong token, 403 with the viewer token, 415 for non-JSON, 413 past the limit, 400 for bad JSON", async () => {
    const req = s.request();
    expect((await call("POST", "/v1/sandcastle-runs", json, req)).status).toBe(401);
    expect((await call("POST", "/v1/sandcastle-runs", { ...json, authorization: "Bearer wrong-token-000000000" }, req)).status).toBe(401);
    expect((await call("POST", "/v1/sandcastle-runs", viewer, req)).status).toBe(403);
    expect((await call("POST", "/v1/sandcastle-runs", { ...admin, "content-type": "text/plain" }, JSON.stringify(req))).status).toBe(415);
    const big = await call("POST", "/v1/sandcastle-runs", admin, { ...req, extra_env: { PAD: "x".repeat(API_BODY_LIMIT_BYTES) } });
    expect(big.status).toBe(413);
    expect(big.body.error).toBe("body_too_large");
    const bad = await call("POST", "/v1/sandcastle-runs", admin, "{not json");
    expect(bad).toMatchObject({ status: 400, body: { error: "invalid_json" } });
  });

  it("Idempotency-Key: a repeat answers as the first did (201, same job, same Location) marked Idempotent-Replayed; the same key with another body is 422", async () => {
    const req = s.request({}, { FAKE_MODE: "ok" });
    const key = { ...admin, "idempotency-key": `k-${Date.now()}` };
    const first = await call("POST", "/v1/sandcastle-runs", key, req);
    const again = await call("POST", "/v1/sandcastle-runs", key, req);
    expect(first.status).toBe(201);
    expect(first.headers.get("idempotent-replayed")).toBeNull();
    expect(again.status).toBe(201);
    expect(again.headers.get("idempotent-replayed")).toBe("true");
    expect(again.body).toEqual(first.body);
    expect(again.headers.get("location")).toBe(first.headers.get("location"));
    expect((await call("POST", "/v1/sandcastle-runs", key, { ...req, branch: "agent/other" })).status).toBe(422);
    const ids = (await s.queue.getJobs(["waiting", "active", "completed", "failed"])).filter((j) => j.data.session_id === req.session_id);
    expect(ids).toHaveLength(1);
    expect((await call("POST", "/v1/sandcastle-runs", { ...admin, "idempotency-key": "" }, req)).status).toBe(400);
  });
});

describe("other endpoints", () => {
  it("POST /v1/margot-intents: 201, the same interaction again 200; 400 names the field", async () => {
    const completion = {
      interaction_id: `api-int-${Date.now()}`,
      body: "What's new in Next.js 15? Nothing affects us.",
      originated_at: "2026-09-17T03:04:05Z",
      originating_session_id: "s1",
    };
    const first = await call("POST", "/v1/margot-intents", admin, completion);
    expect(first).toMatchObject({ status: 201, body: { job_id: `intent-${completion.interaction_id}`, duplicate: false } });
    const job = await finished("margot-intent", first.body.job_id);
    expect(job.result).toMatchObject({ interaction_id: completion.interaction_id, status: "informational" });
    // Again once decided: the same job id, whose new job answers duplicate with where the interaction stands now.
    // (Before the first job finished, the repeat would be that very job: which of the two it meets is a race.)
    const again = await call("POST", "/v1/margot-intents", admin, completion);
    expect(again).toMatchObject({ status: 200, body: { job_id: first.body.job_id, duplicate: true } });
    const repeat = await finished("margot-intent", first.body.job_id);
    expect(repeat.result).toMatchObject({ interaction_id: completion.interaction_id, status: "duplicate", current_state: "informational" });
    const bad = await call("POST", "/v1/margot-intents", admin, { ...completion, originated_at: "yesterday" });
    expect(bad.status).toBe(400);
    expect(bad.body.problems).toEqual([{ field: "originated_at", problem: expect.stringMatching(/ISO 8601/) }]);
  });

  it("POST /v1/margot-intents with Idempotency-Key: a repeat returns the same job with the first's 201, not a second job; the key with another body is 422", async () => {
    const completion = {
      interaction_id: `api-idem-${Date.now()}`,
      body: "What's new in Next.js 15? Nothing affects us.",
      originated_at: "2026-09-17T03:04:05Z",
      originating_session_id: "s1",
    };
    const key = { ...admin, "idempotency-key": `mk-${Date.now()}` };
    const first = await call("POST", "/v1/margot-intents", key, completion);
    expect(first).toMatchObject({ status: 201, body: { job_id: `intent-${completion.interaction_id}`, duplicate: false } });
    const soon = await call("POST", "/v1/margot-intents", key, completion);
    expect(soon.status).toBe(201);
    expect(soon.headers.get("idempotent-replayed")).toBe("true");
    expect(soon.body).toEqual(first.body);
    const done = await finished("margot-intent", first.body.job_id);
    // Without the key, a repeat of a finished interaction replaces its job (a new one answers "duplicate"); with it, nothing is added.
    const later = await call("POST", "/v1/margot-intents", key, completion);
    expect(later.status).toBe(201);
    expect(later.body).toEqual(first.body);
    const after = (await call("GET", `/v1/jobs/margot-intent/${first.body.job_id}`, viewer)).body;
    expect(after).toMatchObject({
      state: "completed",
      created_at: done.created_at,
      finished_at: done.finished_at,
      result: { interaction_id: completion.interaction_id, status: "informational" },
    });
    expect(s.auditRows().filter((r) => r.interaction_id === completion.interaction_id && r.type === "margot_intent_classified")).toHaveLength(1);
    expect((await call("POST", "/v1/margot-intents", key, { ...completion, originating_session_id: "s2" })).status).toBe(422);
  });

  it("GET /v1/jobs: 404 for an unknown queue or job; readable with the viewer token", async () => {
    expect((await call("GET", "/v1/jobs/nope/x", viewer)).status).toBe(404);
    expect((await call("GET", "/v1/jobs/sandcastle-run/run-nope", viewer)).status).toBe(404);
    expect((await call("GET", "/v1/jobs/sandcastle-run/run-nope", json)).status).toBe(401);
  });

  it("POST /v1/runs/:id/cancel stops a running run (killed / cancelled, a failed job); 404 for an unknown run; 403 for a viewer", async () => {
    expect((await call("POST", "/v1/runs/run-nope/cancel", admin)).status).toBe(404);
    const res = await call("POST", "/v1/sandcastle-runs", admin, s.request({}, { FAKE_MODE: "sleep" }));
    await waitFor(() => {
      try {
        readFileSync(s.started(res.body.job_id));
        return true;
      } catch {
        return false;
      }
    }, 20_000);
    expect((await call("POST", `/v1/runs/${res.body.job_id}/cancel`, viewer)).status).toBe(403);
    const cancel = await call("POST", `/v1/runs/${res.body.job_id}/cancel`, admin);
    expect(cancel).toMatchObject({ status: 200, body: { outcome: "stopped", state: "failed", result: { status: "killed", failure_reason: "cancelled" } } });
    expect(s.auditRows().at(-1)).toMatchObject({ failure_reason: "cancelled", requested_by: expect.stringMatching(/^api:admin@/) });
  });

  it("POST /v1/killswitch turns it on and off; GET /v1/status shows it; 400 for a bad body", async () => {
    expect((await call("POST", "/v1/killswitch", admin, { active: "yes" })).status).toBe(400);
    expect((await call("POST", "/v1/killswitch", admin, { active: true })).body).toMatchObject({ active: true, redis: true });
    const status = await call("GET", "/v1/status", viewer);
    expect(status.body.kill_switch.active).toBe(true);
    expect(Object.keys(status.body.queues).sort()).toEqual(["margot-intent", "sandbox-retention", "sandcastle-run"]);
    expect((await call("POST", "/v1/killswitch", admin, { active: false })).body.active).toBe(false);
  });

  it("GET /v1/schemas: JSON Schemas from the zod schemas that accept a real request and refuse a bad one", async () => {
    const res = await call("GET", "/v1/schemas", viewer);
    expect(Object.keys(res.body)).toEqual(
      expect.arrayContaining(["SandcastleRunRequest", "SandcastleRunResult", "MargotResearchCompletion", "MargotIntentResult"]),
    );
    const Ajv2020 = (Ajv2020Module as unknown as { default: typeof Ajv2020Module.default }).default;
    const addFormats = (addFormatsModule as unknown as { default: typeof addFormatsModule.default }).default;
    const ajv = new Ajv2020({ strict: true });
    addFormats(ajv);
    const validate = ajv.compile(res.body.SandcastleRunRequest);
    expect(validate(s.request()), JSON.stringify(validate.errors)).toBe(true);
    expect(validate({ ...s.request(), agent: "gpt-9" })).toBe(false);
    expect(validate({ ...s.request(), unknown_field: 1 })).toBe(false);
    expect(validate({ ...s.request(), prompt_template_dir: "relative/dir" })).toBe(false);
    const result = ajv.compile(res.body.SandcastleRunResult);
    const done = await call("POST", "/v1/sandcastle-runs", admin, s.request({}, { FAKE_MODE: "ok" }));
    expect(result((await finished("sandcastle-run", done.body.job_id)).result)).toBe(true);
  });

  it("GET /metrics: Prometheus text with queue depths, active runs, run durations by status, skips and failures by reason, Redis up", async () => {
    // One skip: the kill switch is on when the run is taken.
    await call("POST", "/v1/killswitch", admin, { active: true });
    const skipped = await call("POST", "/v1/sandcastle-runs", admin, s.request({}, { FAKE_MODE: "ok" }));
    expect((await finished("sandcastle-run", skipped.body.job_id)).result).toMatchObject({ status: "skipped", skip_reason: "kill_switch_active" });
    await call("POST", "/v1/killswitch", admin, { active: false });
    let scraped = await scrape(base, viewer);
    // The skip reaches the counter through the event stream: give it a moment.
    await waitFor(async () => {
      scraped = await scrape(base, viewer);
      return /scq_run_skips_total\{reason="kill_switch_active"\} 1/.test(scraped.text);
    }, 10_000, () => "the skip to be counted");
    const { res, text, family } = scraped;
    expect(res.status).toBe(200);
    expect(res.headers.get("content-type")).toMatch(/^text\/plain/);
    // The parser folds a labelled histogram into one series: parse each status' lines on their own.
    const runsEnded = (status: string) => {
      const lines = text
        .split("\n")
        .filter((l) =>
          l.startsWith("# ") ? l.includes("scq_run_duration_seconds ") : l.startsWith("scq_run_duration_seconds_bucket") && l.includes(`status="${status}"`),
        );
      const parsed = parsePrometheusTextFormat(`${lines.join("\n")}\n`) as Family[];
      return Number(parsed[0]?.metrics[0]?.buckets?.["+Inf"] ?? 0);
    };
    expect(family("scq_redis_up").metrics[0]!.value).toBe("1");
    expect(family("scq_active_runs").metrics[0]!.value).toBe("0");
    expect(family("scq_queue_jobs").metrics).toEqual(expect.arrayContaining([{ labels: { queue: "sandcastle-run", state: "failed" }, value: expect.stringMatching(/^[1-9]/) }]));
    expect(family("scq_run_duration_seconds").type).toBe("HISTOGRAM");
    expect(runsEnded("ok")).toBeGreaterThanOrEqual(3);
    expect(runsEnded("failed")).toBe(1);
    expect(runsEnded("killed")).toBe(1);
    expect(family("scq_run_failures_total").metrics).toEqual(
      expect.arrayContaining([
        { labels: { reason: "agent_unavailable" }, value: "1" },
        { labels: { reason: "cancelled" }, value: "1" },
      ]),
    );
    // The two informational completions of the margot-intents tests above.
    expect(family("scq_margot_intents_total").metrics).toEqual(expect.arrayContaining([{ labels: { status: "informational" }, value: "2" }]));
    expect((await fetch(`${base}/metrics`)).status).toBe(401);
  });

  it("GET /metrics counts Margot drafts by outcome: two drafted, one rejected on the local review channel, one expired", async () => {
    const m = await new MargotScope().start();
    try {
      // Expiry with room for a CLI start on a loaded machine before it: the rejected draft must not expire first.
      const env = m.localEnv({ MARGOT_DRAFT_EXPIRY_SECONDS: "8" });
      const service = await m.service(env);
      const [rejected, expired] = await Promise.all([m.submit(m.completion(ACTION_BODY)), m.submit(m.completion(ACTION_BODY))]);
      expect([rejected.status, expired.status]).toEqual(["drafted", "drafted"]);
      const react = await runCli(["drafts", "react", rejected.draft_id!, "reject"], env);
      expect(react.code, react.stderr).toBe(0);
      await m.waitState(expired.draft_id!, "expired", 20_000);
      expect((await m.draft(rejected.draft_id!)).state).toBe("rejected");
      const outcomes = () =>
        scrape(m.baseUrl).then(({ family }) => Object.fromEntries(family("scq_margot_drafts_total").metrics.map((s) => [s.labels?.outcome, s.value])));
      // The expiry reaches the counter through the event stream: give it a moment.
      await waitFor(async () => (await outcomes()).expired === "1", 10_000, () => "the expiry to be counted");
      // Every outcome is a series from the start, at 0 until it happens.
      expect(await outcomes()).toEqual({ drafted: "2", queued_rate_limit: "0", posted: "0", deferred: "0", approved: "0", rejected: "1", expired: "1" });
      await service.stop();
    } finally {
      await m.close();
    }
  });
});

describe("GET /metrics beyond the service's own counts", () => {
  it("has the process's metrics, every labelled series from the start at 0, and counters of finished jobs beside the gauges of kept ones", async () => {
    const { text, family } = await scrape(base, viewer);
    // prom-client's defaults: the process and Node's event loop.
    for (const name of [
      "process_resident_memory_bytes", "process_cpu_user_seconds_total", "process_open_fds", "nodejs_eventloop_lag_seconds", "nodejs_heap_size_used_bytes",
    ]) {
      expect(family(name).metrics.length, name).toBeGreaterThan(0);
    }
    expect(Number(family("process_resident_memory_bytes").metrics[0]!.value)).toBeGreaterThan(10 * 1024 * 1024);
    // Known label values are series before their first event (a first event is then an increase, not a new series).
    const labelled = (name: string, label: string) => new Set(family(name).metrics.map((m) => m.labels?.[label]));
    for (const reason of SKIP_REASONS) expect(labelled("scq_run_skips_total", "reason"), reason).toContain(reason);
    for (const reason of FAILURE_REASONS) expect(labelled("scq_run_failures_total", "reason"), reason).toContain(reason);
    for (const status of IntentStatus.options) expect(labelled("scq_margot_intents_total", "status"), status).toContain(status);
    expect(text).toMatch(/^scq_run_skips_total\{reason="concurrency_cap"\} 0$/m);
    expect(text).toMatch(/^scq_run_duration_seconds_count\{status="timeout"\} 0$/m);
    const finishedCounts = () =>
      scrape(base, viewer).then(({ family: f }) =>
        Object.fromEntries(f("scq_jobs_finished_total").metrics.map((m) => [`${m.labels?.queue}/${m.labels?.state}`, Number(m.value)])),
      );
    const before = await finishedCounts();
    expect(Object.keys(before).sort()).toEqual([
      "margot-intent/completed", "margot-intent/failed", "sandbox-retention/completed", "sandbox-retention/failed", "sandcastle-run/completed",
      "sandcastle-run/failed",
    ]);
    expect(before["sandbox-retention/failed"]).toBe(0);
    // One run ends ok, one fails: each counter goes up by exactly one.
    const ok = await call("POST", "/v1/sandcastle-runs", admin, s.request({}, { FAKE_MODE: "ok" }));
    const fail = await call("POST", "/v1/sandcastle-runs", admin, s.request({}, { FAKE_MODE: "fail" }));
    await finished("sandcastle-run", ok.body.job_id);
    await finished("sandcastle-run", fail.body.job_id);
    let after = before;
    await waitFor(async () => {
      after = await finishedCounts();
      return (
        after["sandcastle-run/completed"] === before["sandcastle-run/completed"]! + 1 && after["sandcastle-run/failed"] === before["sandcastle-run/failed"]! + 1
      );
    }, 10_000, () => `each finished counter up by one (${JSON.stringify(before)} → ${JSON.stringify(after)})`);
  });

  it("passes promtool check metrics when promtool is installed (Prometheus's own linter)", async (ctx) => {
    const which = spawnSync("sh", ["-c", "command -v promtool"], { encoding: "utf8" });
    if (which.status !== 0) return ctx.skip("promtool is not installed here; the text is parsed by parse-prometheus-text-format above");
    const { text } = await scrape(base, viewer);
    const lint = spawnSync(which.stdout.trim(), ["check", "metrics"], { input: text, encoding: "utf8" });
    expect(lint.status, `${lint.stdout}${lint.stderr}`).toBe(0);
  });
});

describe("Host check (DNS rebinding)", () => {
  it("with a token, a Host that is not loopback or allowed is refused, even with the token", async () => {
    const res = await rawRequest(`${base}/v1/status`, { headers: { ...viewer, host: "attacker.test" } });
    expect(res.status).toBe(421);
    expect(res.body).not.toContain("sandcastle-run");
    expect((await rawRequest(`${base}/v1/status`, { headers: { ...viewer, host: "localhost:1234" } })).status).toBe(200);
  });

  it("without a token, only loopback Host values are served: a rebinding page reads nothing and pauses nothing", async () => {
    const open = new CliProcess(["serve"], s.env({ PORT: "0", SCQ_BOARD_READ_ONLY: "0" }));
    await open.waitForOutput(/Bull Board at (http:\/\/\S+)\/admin\/queues/);
    const url = /Bull Board at (http:\/\/\S+)\/admin\/queues/.exec(open.stdout)![1]!;
    const rebound = { host: "attacker.test" };
    expect((await rawRequest(`${url}/v1/status`, { headers: rebound })).status).toBe(421);
    expect((await rawRequest(`${url}/admin/queues/api/queues`, { headers: rebound })).status).toBe(421);
    expect((await rawRequest(`${url}/admin/queues/api/queues/sandcastle-run/pause`, { method: "PUT", headers: rebound })).status).toBe(421);
    expect(await s.queue.isPaused()).toBe(false);
    expect((await fetch(`${url}/v1/status`)).status).toBe(200);
    await open.stop();
  });

  it("SCQ_ALLOWED_HOSTS lets a named host through", async () => {
    const proxied = new CliProcess(["serve"], s.env({ PORT: "0", SCQ_API_TOKEN: ADMIN, SCQ_ALLOWED_HOSTS: "queue.example.com" }));
    await proxied.waitForOutput(/Bull Board at (http:\/\/\S+)\/admin\/queues/);
    const url = /Bull Board at (http:\/\/\S+)\/admin\/queues/.exec(proxied.stdout)![1]!;
    expect((await rawRequest(`${url}/v1/status`, { headers: { ...admin, host: "queue.example.com" } })).status).toBe(200);
    expect((await rawRequest(`${url}/v1/status`, { headers: { ...admin, host: "other.example.com" } })).status).toBe(421);
    await proxied.stop();
  });
});

describe("CLI", () => {
  it("logs of an unknown session says so and exits 1; an unknown command and bad settings are one line each", async () => {
    const logs = await runCli(["logs", "never-seen-session"], s.env());
    expect(logs.code).toBe(1);
    expect(logs.stderr.trim()).toMatch(/^sandcastle-queue: no session log for never-seen-session/);
    const unknown = await runCli(["frobnicate"], s.env());
    expect(unknown.code).toBe(1);
    expect(unknown.stderr.trim().split("\n")).toEqual([expect.stringMatching(/^sandcastle-queue: unknown command 'frobnicate'/)]);
    const config = await runCli(["status"], s.env({ PORT: "eighty", SCQ_VIEWER_TOKEN: "short" }));
    expect(config.code).toBe(1);
    expect(config.stderr.trim().split("\n")).toEqual([expect.stringMatching(/^sandcastle-queue: invalid configuration: PORT: takes a whole number; SCQ_VIEWER_TOKEN: must be at least 16/)]);
  });
});
