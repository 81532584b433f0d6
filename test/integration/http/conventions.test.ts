// HTTP as its conventions say, seen from outside: a real `start` process (workers + HTTP, the fake run child)
// answered over real HTTP (fetch, node:http for any Host). RFC 9457 problems, 401 with WWW-Authenticate,
// 201 with Location, 405 with Allow, fields named in the project's words, SSE's `retry:`, a live log that
// ends only for a run of its session, a run's end announced once its result can be read, and the access log.
import { randomUUID } from "node:crypto";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { stopAllCli, waitFor, type CliProcess } from "../../helpers/cli.js";
import { httpCaller, startService, type HttpAnswer } from "../../helpers/http-service.js";
import { rawRequest } from "../../helpers/raw-http.js";
import { RunScope } from "../../helpers/run-scope.js";
import { SseReader } from "../../helpers/sse-reader.js";

const ADMIN = "conventions-admin-token-0123456789";
const VIEWER = "conventions-viewer-token-0123456789";
let s: RunScope;
let base: string;
let service: CliProcess;

beforeAll(async () => {
  s = new RunScope();
  ({ service, base } = await startService("start", s.env({ PORT: "0", SCQ_API_TOKEN: ADMIN, SCQ_VIEWER_TOKEN: VIEWER, LOG_LEVEL: "info" })));
});
afterAll(async () => {
  await stopAllCli();
  await s.close();
});

const json = { "content-type": "application/json" };
const admin = { ...json, authorization: `Bearer ${ADMIN}` };
const viewer = { authorization: `Bearer ${VIEWER}` };

const call = httpCaller(() => base);

/** An RFC 9457 problem with the fields clients had before (`error`, `message`). */
function expectProblem(res: HttpAnswer, status: number, error: string): void {
  expect(res.status, JSON.stringify(res.body)).toBe(status);
  expect(res.headers.get("content-type")).toMatch(/^application\/problem\+json/);
  expect(res.body).toMatchObject({
    type: `tag:sandcastle-queue,2026:problem:${error}`,
    title: expect.any(String),
    status,
    detail: expect.any(String),
    error,
    message: res.body.detail,
  });
}

/** zod's own phrases; none may reach a client. */
const ZOD_WORDING = /Invalid (input|option|string|key|element)|Too (small|big)|expected \w+, received|Unrecognized key/;

describe("errors are RFC 9457 problems", () => {
  it("401 carries WWW-Authenticate (invalid_token for a wrong one); 403, 404, 415, 421 and 400 are problems too", async () => {
    const none = await call("GET", "/v1/status", {});
    expectProblem(none, 401, "unauthorized");
    expect(none.headers.get("www-authenticate")).toBe('Bearer realm="sandcastle-queue"');
    const wrong = await call("GET", "/v1/status", { authorization: "Bearer not-a-token-of-this-server" });
    expectProblem(wrong, 401, "unauthorized");
    expect(wrong.headers.get("www-authenticate")).toBe('Bearer realm="sandcastle-queue", error="invalid_token"');
    expectProblem(await call("POST", "/v1/killswitch", { ...json, ...viewer }, { active: true }), 403, "forbidden");
    expectProblem(await call("GET", "/v1/jobs/sandcastle-run/run-nope", viewer), 404, "unknown_job");
    expectProblem(await call("GET", "/v1/no-such-thing", viewer), 404, "not_found");
    expectProblem(await call("POST", "/v1/killswitch", { ...admin, "content-type": "text/plain" }, "x"), 415, "unsupported_media_type");
    expectProblem(await call("POST", "/v1/killswitch", admin, "{oops"), 400, "invalid_json");
    const rebound = await rawRequest(`${base}/v1/status`, { headers: { ...viewer, host: "attacker.test" } });
    expect(rebound.status).toBe(421);
    expect(JSON.parse(rebound.body)).toMatchObject({ type: "tag:sandcastle-queue,2026:problem:host_not_allowed", status: 421, error: "host_not_allowed" });
  });

  it("a refused body names each field, an unknown field by its own name, in the project's words", async () => {
    const res = await call("POST", "/v1/sandcastle-runs", admin, {
      ...s.request(),
      timeout_minutes: "soon",
      agent: "gpt-9",
      colour: "blue",
      __extra: 1,
      session_id: undefined,
    });
    expectProblem(res, 400, "invalid_request");
    expect(res.body.problems).toEqual(
      expect.arrayContaining([
        { field: "timeout_minutes", problem: "must be a number, not a string" },
        { field: "agent", problem: 'takes one of "claudeCode", "codex", "pi", "opencode", "script"' },
        { field: "session_id", problem: "is required" },
        { field: "colour", problem: "unknown field" },
        { field: "__extra", problem: "unknown field" },
      ]),
    );
    expect(res.body.problems.map((p: { field: string }) => p.field)).not.toContain("(top level)");
    const margot = await call("POST", "/v1/margot-intents", admin, {
      interaction_id: 42,
      body: "",
      originated_at: "2026-09-17T03:04:05Z",
      originating_session_id: "s1",
      priority: 1,
    });
    expect(margot.body.problems).toEqual(
      expect.arrayContaining([
        { field: "interaction_id", problem: "interaction_id must be a string" },
        { field: "body", problem: "body must not be empty" },
        { field: "priority", problem: "unknown field" },
      ]),
    );
    const switches = await call("POST", "/v1/killswitch", admin, []);
    expect(switches.body.problems).toEqual([{ field: "(top level)", problem: "must be an object, not an array" }]);
    for (const r of [res, margot, switches]) expect(JSON.stringify(r.body)).not.toMatch(ZOD_WORDING);
  });
});

describe("201, 405, OPTIONS", () => {
  it("201 names the new job in Location, which reads it", async () => {
    const created = await call("POST", "/v1/sandcastle-runs", admin, s.request({}, { FAKE_MODE: "ok" }));
    expect(created.status).toBe(201);
    const location = created.headers.get("location");
    expect(location).toBe(`/v1/jobs/sandcastle-run/${created.body.run_id}`);
    expect((await call("GET", location!, viewer)).body).toMatchObject({ queue: "sandcastle-run", id: created.body.run_id });
    const intent = await call("POST", "/v1/margot-intents", admin, {
      interaction_id: `loc-${Date.now()}`,
      body: "What's new in Next.js 15? Nothing affects us.",
      originated_at: "2026-09-17T03:04:05Z",
      originating_session_id: "s1",
    });
    expect(intent.status).toBe(201);
    expect(intent.headers.get("location")).toBe(intent.body.links.job);
  });

  it("a method a path does not take is 405 with Allow, under /v1 and outside; OPTIONS answers Allow", async () => {
    const cases: Array<[string, string, Record<string, string>, string]> = [
      ["POST", "/v1/status", admin, "GET, HEAD, OPTIONS"],
      ["GET", "/v1/sandcastle-runs", viewer, "OPTIONS, POST"],
      ["DELETE", "/v1/jobs/sandcastle-run/run-x", admin, "GET, HEAD, OPTIONS"],
      ["GET", "/v1/runs/run-x/cancel", viewer, "OPTIONS, POST"],
      ["PUT", "/v1/sessions/s/logs", admin, "GET, HEAD, OPTIONS"],
      ["POST", "/v1/openapi.json", admin, "GET, HEAD, OPTIONS"],
      ["POST", "/healthz", {}, "GET, HEAD, OPTIONS"],
      ["DELETE", "/metrics", admin, "GET, HEAD, OPTIONS"],
      ["POST", "/readyz", admin, "GET, HEAD, OPTIONS"],
      ["GET", "/logout", {}, "OPTIONS, POST"],
      ["GET", "/telegram/webhook", {}, "OPTIONS, POST"],
    ];
    for (const [method, path, headers, allow] of cases) {
      const res = await call(method, path, headers);
      expectProblem(res, 405, "method_not_allowed");
      expect(res.headers.get("allow"), `${method} ${path}`).toBe(allow);
    }
    const options = await call("OPTIONS", "/v1/jobs/sandcastle-run/run-x", viewer);
    expect(options.status).toBe(204);
    expect(options.headers.get("allow")).toBe("GET, HEAD, OPTIONS");
    // HEAD is GET without a body.
    expect((await call("HEAD", "/v1/status", viewer)).status).toBe(200);
  });
});

describe("live logs", () => {
  it("the stream opens with retry:; a malformed, doubled, unknown or other session's run_id is refused at once", async () => {
    const created = await call("POST", "/v1/sandcastle-runs", admin, s.request({}, { FAKE_MODE: "ok" }));
    const other = await call("POST", "/v1/sandcastle-runs", admin, s.request({}, { FAKE_MODE: "ok" }));
    const logs = `/v1/sessions/${created.body.session_id}/logs`;
    const res = await fetch(`${base}${logs}?run_id=${created.body.run_id}`, { headers: viewer });
    expect(res.headers.get("content-type")).toMatch(/^text\/event-stream/);
    const text = await res.text();
    expect(text.startsWith("retry: 3000\n\n")).toBe(true);
    expect(text).toMatch(/event: end\n/);

    const refused = async (query: string) => {
      const started = Date.now();
      const r = await call("GET", `${logs}?${query}`, viewer);
      expect(Date.now() - started).toBeLessThan(5000);
      return r;
    };
    expectProblem(await refused("run_id=bogus"), 400, "invalid_request");
    const doubled = await refused(`run_id=${created.body.run_id}&run_id=${created.body.run_id}`);
    expectProblem(doubled, 400, "invalid_request");
    expect(doubled.body.problems).toEqual([{ field: "run_id", problem: "is given more than once" }]);
    expectProblem(await refused(`run_id=run-${randomUUID()}`), 404, "unknown_run");
    expectProblem(await refused(`run_id=${other.body.run_id}`), 404, "unknown_run");
  });

  it("a client that reads the job as soon as the stream ends finds the run's result there, every time", async () => {
    for (let i = 0; i < 12; i++) {
      const created = await call("POST", "/v1/sandcastle-runs", admin, s.request({}, { FAKE_MODE: i % 3 === 2 ? "fail" : "ok" }));
      expect(created.status).toBe(201);
      const reader = new SseReader(`${base}${created.body.links.logs}`, VIEWER);
      try {
        await reader.waitForEnd(30_000);
      } finally {
        reader.close();
      }
      // No wait, no poll: the documented flow.
      const job = await call("GET", created.body.links.job, viewer);
      expect(job.body, `run ${i}`).toMatchObject({
        state: i % 3 === 2 ? "failed" : "completed",
        phase: "done",
        result: { run_id: created.body.run_id, status: i % 3 === 2 ? "failed" : "ok" },
      });
      const ended = reader.events.find((e) => e.type === "run-ended");
      expect(JSON.parse(ended!.data)).toMatchObject({ run_id: created.body.run_id, status: job.body.result.status });
    }
  });
});

describe("access log", () => {
  it("one line per request at info: method, path, status, time, client; refusals too; never a token, cookie or query", async () => {
    // A browser session: its cookie must not be logged either.
    const login = await fetch(`${base}/login`, {
      method: "POST",
      headers: { "content-type": "application/x-www-form-urlencoded" },
      body: `token=${ADMIN}&next=%2Fadmin%2Fqueues`,
      redirect: "manual",
    });
    const cookie = /scq_session=([^;]+)/.exec(login.headers.get("set-cookie") ?? "")![1]!;
    await call("GET", "/v1/status?secret_looking=query-value-1234", { cookie: `scq_session=${cookie}` });
    await call("GET", "/v1/status", { authorization: `Basic ${Buffer.from(`ops:${VIEWER}`).toString("base64")}` });
    await call("GET", "/v1/status", { authorization: "Bearer wrong-token-value-000000" });
    await rawRequest(`${base}/healthz`, { headers: { host: "attacker.test" } });
    const mark = `/healthz-mark-${Date.now()}`;
    await call("GET", mark, viewer);
    await waitFor(() => service.stderr.includes(mark), 5000, () => "the last request's line");

    const lines = service.stderr
      .split("\n")
      .filter((l) => l.includes('"access"'))
      .map((l) => JSON.parse(l) as { level: number; msg: string; access: { method: string; path: string; status: number; ms: number; client: string } });
    const seen = lines.map((l) => `${l.access.method} ${l.access.path} ${l.access.status}`);
    expect(seen).toEqual(expect.arrayContaining(["POST /login 303", "GET /v1/status 200", "GET /v1/status 401", "GET /healthz 421", `GET ${mark} 404`]));
    for (const l of lines) {
      expect(l.level).toBe(30);
      expect(l.msg).toBe("http request");
      expect(l.access.client).toMatch(/^(::ffff:)?127\.0\.0\.1$|^::1$/);
      expect(l.access.ms).toBeGreaterThanOrEqual(0);
    }
    for (const secret of [ADMIN, VIEWER, cookie, "wrong-token-value-000000", Buffer.from(`ops:${VIEWER}`).toString("base64"), "query-value-1234"]) {
      expect(service.stderr).not.toContain(secret);
    }
  });

  it("SCQ_ACCESS_LOG_LEVEL=silent logs no request", async () => {
    const { service: quiet, base: url } = await startService(
      "serve",
      s.env({ PORT: "0", SCQ_API_TOKEN: ADMIN, LOG_LEVEL: "info", SCQ_ACCESS_LOG_LEVEL: "silent" }),
    );
    expect((await fetch(`${url}/healthz`)).status).toBe(200);
    expect((await fetch(`${url}/v1/status`)).status).toBe(401);
    await quiet.stop();
    expect(quiet.stderr).not.toContain('"access"');
  });
});
