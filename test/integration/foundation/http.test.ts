// Bull Board and the health endpoints, through a real `serve` process on the shared test Redis.
import { afterAll, afterEach, beforeAll, describe, expect, it } from "vitest";
import { CliProcess, cliEnv, runCli, stopAllCli } from "../../helpers/cli.js";
import { deletePrefix, redisUrl, uniquePrefix } from "../../helpers/scope.js";

const TOKEN = "test-token-0123456789abcdef";
const prefix = uniquePrefix();
let serve: CliProcess;
let base: string;

beforeAll(async () => {
  serve = new CliProcess(["serve"], cliEnv({ REDIS_URL: redisUrl(), SCQ_KEY_PREFIX: prefix, PORT: "0", SCQ_API_TOKEN: TOKEN }));
  await serve.waitForOutput(/Bull Board at (http:\/\/\S+)\/admin\/queues/);
  base = /Bull Board at (http:\/\/\S+)\/admin\/queues/.exec(serve.stdout)![1]!;
});

afterAll(async () => {
  await serve.stop();
  await deletePrefix(redisUrl(), prefix);
});

afterEach(() => {});

const bearer = { authorization: `Bearer ${TOKEN}` };
const basic = { authorization: `Basic ${Buffer.from(`ops:${TOKEN}`).toString("base64")}` };

describe("HTTP server", () => {
  it("/healthz answers without a token", async () => {
    const res = await fetch(`${base}/healthz`);
    expect(res.status).toBe(200);
    expect(await res.json()).toEqual({ ok: true });
  });

  it("Bull Board answers 401 without the token, and with a wrong one; a browser is sent to the login page", async () => {
    expect((await fetch(`${base}/admin/queues`)).status).toBe(401);
    expect((await fetch(`${base}/admin/queues`, { headers: { authorization: "Bearer wrong" } })).status).toBe(401);
    const res = await fetch(`${base}/admin/queues`, { headers: { accept: "text/html" }, redirect: "manual" });
    expect(res.status).toBe(303);
    expect(res.headers.get("location")).toBe("/login?next=%2Fadmin%2Fqueues");
  });

  it("Bull Board answers 200 with the token (bearer or basic) and shows the three queues", async () => {
    const page = await fetch(`${base}/admin/queues`, { headers: bearer });
    expect(page.status).toBe(200);
    expect(await page.text()).toMatch(/<html/i);
    const api = await fetch(`${base}/admin/queues/api/queues`, { headers: basic });
    expect(api.status).toBe(200);
    const body = (await api.json()) as { queues: Array<{ name: string; readOnlyMode: boolean }> };
    expect(body.queues.map((q) => q.name).sort()).toEqual(["margot-intent", "sandbox-retention", "sandcastle-run"]);
    expect(body.queues.every((q) => q.readOnlyMode)).toBe(true);
  });

  it("/readyz needs the token and says Redis answers", async () => {
    expect((await fetch(`${base}/readyz`)).status).toBe(401);
    const res = await fetch(`${base}/readyz`, { headers: bearer });
    expect(res.status).toBe(200);
    expect(await res.json()).toEqual({ ready: true });
  });

  it("refuses cross-site writes even with valid credentials", async () => {
    const res = await fetch(`${base}/admin/queues/api/queues/pause`, { method: "PUT", headers: { ...basic, origin: "https://evil.example" } });
    expect(res.status).toBe(403);
  });
});

describe("HTTP bind safety", () => {
  it("refuses a non-loopback HOST without SCQ_API_TOKEN", async () => {
    const res = await runCli(["serve"], cliEnv({ REDIS_URL: redisUrl(), SCQ_KEY_PREFIX: prefix, PORT: "0", HOST: "0.0.0.0" }));
    await stopAllCli();
    expect(res.code).toBe(1);
    expect(res.stderr).toMatch(/refusing to serve on 0\.0\.0\.0 without SCQ_API_TOKEN/);
  });
});
