// GET /v1/openapi.json from a real `start` process: valid OpenAPI 3.1 by an independent validator
// (@readme/openapi-parser: the OpenAPI 3.1 JSON Schema plus its own checks of $refs, parameters, operation ids),
// naming every route the service serves, with its auth schemes and the SSE stream; and the service's real
// answers — 201 and 200 envelopes, jobs, cancel, kill switch, status, problems, SSE event data — validate
// against the document's own schemas under ajv strict.
import Ajv2020Module from "ajv/dist/2020.js";
import addFormatsModule from "ajv-formats";
import { compileErrors, validate } from "@readme/openapi-parser";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { stopAllCli, waitFor } from "../../helpers/cli.js";
import { startService } from "../../helpers/http-service.js";
import { RunScope } from "../../helpers/run-scope.js";
import { SseReader } from "../../helpers/sse-reader.js";

const Ajv2020 = (Ajv2020Module as unknown as { default: typeof Ajv2020Module.default }).default;
const addFormats = (addFormatsModule as unknown as { default: typeof addFormatsModule.default }).default;

const ADMIN = "openapi-admin-token-0123456789";
const VIEWER = "openapi-viewer-token-0123456789";
let s: RunScope;
let base: string;
let doc: any;

beforeAll(async () => {
  s = new RunScope();
  ({ base } = await startService("start", s.env({ PORT: "0", SCQ_API_TOKEN: ADMIN, SCQ_VIEWER_TOKEN: VIEWER })));
  const res = await fetch(`${base}/v1/openapi.json`, { headers: { authorization: `Bearer ${VIEWER}` } });
  expect(res.status).toBe(200);
  doc = await res.json();
});
afterAll(async () => {
  await stopAllCli();
  await s.close();
});

const admin = { authorization: `Bearer ${ADMIN}`, "content-type": "application/json" };
const viewer = { authorization: `Bearer ${VIEWER}` };

/** Every route the service serves, as README and docs/contracts.md list them. */
const ROUTES = [
  "get /healthz",
  "get /readyz",
  "get /metrics",
  "get /login",
  "post /login",
  "post /logout",
  "get /admin/queues",
  "post /telegram/webhook",
  "post /v1/sandcastle-runs",
  "post /v1/margot-intents",
  "get /v1/jobs/{queue}/{id}",
  "post /v1/runs/{run_id}/cancel",
  "post /v1/killswitch",
  "get /v1/status",
  "get /v1/schemas",
  "get /v1/openapi.json",
  "get /v1/sessions/{id}/logs",
];

/**
 * A validator for the document's schemas: its components under ajv strict (draft 2020-12 with formats), their
 * `#/components/schemas/X` refs pointing into one schema of ajv's. The document's own words, not zod's.
 */
function documentValidator() {
  const ajv = new Ajv2020({ strict: true, allErrors: true });
  addFormats(ajv);
  const rewrite = (v: unknown): unknown =>
    Array.isArray(v)
      ? v.map(rewrite)
      : v !== null && typeof v === "object"
        ? Object.fromEntries(
            Object.entries(v).map(([k, x]) => [
              k,
              k === "$ref" && typeof x === "string" ? x.replace("#/components/schemas/", "urn:scq:openapi#/$defs/") : rewrite(x),
            ]),
          )
        : v;
  ajv.addSchema({ $id: "urn:scq:openapi", $defs: rewrite(doc.components.schemas) as Record<string, unknown> });
  return (schema: unknown, value: unknown): string | null => {
    const check = ajv.compile(rewrite(schema) as object);
    return check(value) ? null : ajv.errorsText(check.errors);
  };
}

/** The schema the document gives for this answer: its operation by method and path template, its status, its media type. */
function answerSchema(method: string, path: string, status: number, contentType: string): unknown {
  const url = new URL(path, base);
  const template = Object.keys(doc.paths).find((t) => new RegExp(`^${t.replace(/\{[^}]+\}/g, "[^/]+").replace(/\./g, "\\.")}$`).test(url.pathname));
  expect(template, `${method} ${url.pathname} is in the document`).toBeDefined();
  const response = doc.paths[template!][method.toLowerCase()]?.responses?.[String(status)];
  expect(response, `${method} ${template} documents ${status}`).toBeDefined();
  const media = contentType.split(";")[0]!.trim();
  const content = response.content?.[media];
  expect(content, `${method} ${template} ${status} documents ${media}`).toBeDefined();
  return content.schema;
}

let check: ReturnType<typeof documentValidator>;

/** One real request, its answer checked against the document. */
async function real(method: string, path: string, headers: Record<string, string>, body?: unknown): Promise<{ status: number; body: any; headers: Headers }> {
  const res = await fetch(`${base}${path}`, { method, headers, ...(body === undefined ? {} : { body: JSON.stringify(body) }) });
  const text = await res.text();
  const parsed = text === "" ? undefined : (JSON.parse(text) as unknown);
  const schema = answerSchema(method, path, res.status, res.headers.get("content-type") ?? "");
  check ??= documentValidator();
  expect(check(schema, parsed), `${method} ${path} → ${res.status} ${text}`).toBeNull();
  return { status: res.status, body: parsed, headers: res.headers };
}

describe("the OpenAPI document", () => {
  it("is valid OpenAPI 3.1 to @readme/openapi-parser, which does refuse a broken one", async () => {
    expect(doc.openapi).toBe("3.1.0");
    const result = await validate(structuredClone(doc));
    expect(result.valid, result.valid ? "" : compileErrors(result)).toBe(true);
    // Not a validator that passes everything: a dangling $ref and a response without a description are caught.
    const broken = structuredClone(doc);
    broken.paths["/v1/status"].get.responses["200"].content["application/json"].schema = { $ref: "#/components/schemas/NoSuchSchema" };
    expect((await validate(broken)).valid).toBe(false);
    const undescribed = structuredClone(doc);
    delete undescribed.paths["/healthz"].get.responses["200"].description;
    expect((await validate(undescribed)).valid).toBe(false);
  });

  it("names every route the service serves, and each one answers (no 404, no 405)", async () => {
    const documented = Object.entries(doc.paths as Record<string, Record<string, unknown>>).flatMap(([path, ops]) =>
      Object.keys(ops).map((m) => `${m} ${path}`),
    );
    expect(documented.sort()).toEqual([...ROUTES].sort());
    for (const route of ROUTES) {
      const [method, template] = route.split(" ") as [string, string];
      const path = template.replace("{queue}", "sandcastle-run").replace(/\{[^}]+\}/g, "x");
      const res = await fetch(`${base}${path}`, { method: method.toUpperCase(), headers: { authorization: `Bearer ${ADMIN}` }, redirect: "manual" });
      await res.body?.cancel();
      if (path.includes("/x")) continue; // an unknown id is a documented 404 of a route that exists
      expect([404, 405], `${route} → ${res.status}`).not.toContain(res.status);
    }
  });

  it("describes the auth schemes, the problem answers, the headers and the SSE stream", () => {
    expect(doc.components.securitySchemes).toMatchObject({
      bearerToken: { type: "http", scheme: "bearer" },
      basicToken: { type: "http", scheme: "basic" },
      sessionCookie: { type: "apiKey", in: "cookie", name: "scq_session" },
      telegramSecret: { type: "apiKey", in: "header", name: "X-Telegram-Bot-Api-Secret-Token" },
    });
    expect(doc.paths["/healthz"].get.security).toEqual([]);
    const enqueue = doc.paths["/v1/sandcastle-runs"].post;
    expect(enqueue.requestBody.content["application/json"].schema).toEqual({ $ref: "#/components/schemas/SandcastleRunRequest" });
    expect(Object.keys(enqueue.responses).sort()).toEqual(["200", "201", "400", "401", "403", "409", "413", "415", "421", "422", "500", "503"]);
    expect(enqueue.responses["201"].headers).toHaveProperty("Location");
    expect(enqueue.responses["401"].content["application/problem+json"].schema).toEqual({ $ref: "#/components/schemas/Problem" });
    expect(enqueue.responses["401"].headers).toHaveProperty("WWW-Authenticate");
    const stream = doc.paths["/v1/sessions/{id}/logs"].get.responses["200"].content["text/event-stream"];
    expect(stream["x-events"]).toMatchObject({ "run-ended": { $ref: "#/components/schemas/RunMarker" }, end: { $ref: "#/components/schemas/SessionLogEnd" } });
    // The run request as strict as the server where JSON Schema can say it.
    expect(doc.components.schemas.SandcastleRunRequest.properties.prompt_template_dir.pattern).toBe("^\\/");
    expect(JSON.stringify(doc)).not.toContain("starts_with");
  });
});

describe("real answers validate against the document", () => {
  it("enqueue (201), replay, job, cancel, kill switch, status, schemas, health, and problems", async () => {
    const created = await real("POST", "/v1/sandcastle-runs", { ...admin, "idempotency-key": `oa-${Date.now()}` }, s.request({}, { FAKE_MODE: "ok" }));
    expect(created.status).toBe(201);
    expect(
      (await real("POST", "/v1/sandcastle-runs", { ...admin, "idempotency-key": `oa-${Date.now() - 1}` }, s.request({}, { FAKE_MODE: "fail" }))).status,
    ).toBe(201);
    const reader = new SseReader(`${base}${created.body.links.logs}`, VIEWER);
    await reader.waitForEnd();
    reader.close();
    for (const e of reader.events.filter((ev) => ev.type !== "line")) {
      const schema = doc.paths["/v1/sessions/{id}/logs"].get.responses["200"].content["text/event-stream"]["x-events"][e.type];
      expect(check(schema, JSON.parse(e.data)), `${e.type} ${e.data}`).toBeNull();
    }
    // Not a check that passes everything: a field the document does not name, or a wrong type, is caught.
    const enqueued = answerSchema("POST", "/v1/sandcastle-runs", 201, "application/json");
    expect(check(enqueued, { ...created.body, extra: 1 })).toMatch(/additional properties/);
    expect(check(enqueued, { ...created.body, run_id: "run-1" })).toMatch(/pattern/);
    const job = await real("GET", created.body.links.job, viewer);
    expect(job.body).toMatchObject({ state: "completed", result: { status: "ok" } });

    const sleeper = await real("POST", "/v1/sandcastle-runs", admin, s.request({}, { FAKE_MODE: "sleep" }));
    await waitFor(async () => (await real("GET", sleeper.body.links.job, viewer)).body.state === "active", 20_000);
    expect((await real("POST", sleeper.body.links.cancel, admin)).body).toMatchObject({ outcome: "stopped", result: { status: "killed" } });
    expect((await real("POST", sleeper.body.links.cancel, admin)).body).toMatchObject({ outcome: "already_finished" });
    const waiting = await real("POST", "/v1/sandcastle-runs", admin, s.request({}, { FAKE_MODE: "ok" }));
    await real("GET", waiting.body.links.job, viewer);

    const intent = {
      interaction_id: `oa-${Date.now()}`,
      body: "What's new in Next.js 15? Nothing affects us.",
      originated_at: "2026-09-17T03:04:05Z",
      originating_session_id: "s1",
    };
    expect((await real("POST", "/v1/margot-intents", admin, intent)).status).toBe(201);
    expect((await real("POST", "/v1/margot-intents", admin, intent)).status).toBe(200);
    await waitFor(async () => (await real("GET", `/v1/jobs/margot-intent/intent-${intent.interaction_id}`, viewer)).body.state === "completed", 20_000);

    await real("POST", "/v1/killswitch", admin, { active: true });
    await real("POST", "/v1/killswitch", admin, { active: false });
    await real("GET", "/v1/status", viewer);
    await real("GET", "/v1/schemas", viewer);
    await real("GET", "/v1/openapi.json", viewer);
    await real("GET", "/healthz", {});
    await real("GET", "/readyz", viewer);

    // Problems, each as the document says.
    expect((await real("POST", "/v1/sandcastle-runs", admin, { ...s.request(), colour: "blue" })).status).toBe(400);
    expect((await real("GET", "/v1/status", {})).status).toBe(401);
    expect((await real("POST", "/v1/killswitch", { ...viewer, "content-type": "application/json" }, { active: true })).status).toBe(403);
    expect((await real("GET", "/v1/jobs/nope/x", viewer)).status).toBe(404);
    expect((await real("POST", "/v1/runs/run-00000000-0000-4000-8000-000000000000/cancel", admin)).status).toBe(404);
    expect((await real("GET", "/v1/sessions/no-such-session/logs", viewer)).status).toBe(404);
    expect((await real("GET", `/v1/sessions/${created.body.session_id}/logs?run_id=bogus`, viewer)).status).toBe(400);
    expect((await real("POST", "/v1/margot-intents", { ...admin, "idempotency-key": "k" }, intent)).status).toBe(200);
    expect((await real("POST", "/v1/margot-intents", { ...admin, "idempotency-key": "k" }, { ...intent, originating_session_id: "s2" })).status).toBe(422);
  });
});
