// Requests that try to exhaust the HTTP side, over real sockets to a real `serve` process.
// A body nested too deep is refused (not a 500), a body past the limit is cut off at the limit (not read in
// full), a connection that sends its request slowly is closed (not held for Node's 300 s), and an
// Idempotency-Key compares bodies as canonical JSON.
import { readFileSync } from "node:fs";
import { connect, type Socket } from "node:net";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { API_BODY_LIMIT_BYTES } from "../../../src/http/api.js";
import { JSON_MAX_DEPTH } from "../../../src/http/json-body.js";
import { CliProcess, stopAllCli } from "../../helpers/cli.js";
import { RunScope } from "../../helpers/run-scope.js";

const ADMIN = "hostile-admin-token-0123456789";
/** The service's request bound in this test, seconds (the default is 30). */
const REQUEST_TIMEOUT_S = 2;
let s: RunScope;
let base: URL;
let service: CliProcess;

beforeAll(async () => {
  s = new RunScope();
  service = new CliProcess(["serve"], s.env({ PORT: "0", SCQ_API_TOKEN: ADMIN, SCQ_HTTP_REQUEST_TIMEOUT_SECONDS: String(REQUEST_TIMEOUT_S) }));
  await service.waitForOutput(/Bull Board at (http:\/\/\S+)\/admin\/queues/);
  base = new URL(/Bull Board at (http:\/\/\S+)\/admin\/queues/.exec(service.stdout)![1]!);
});
afterAll(async () => {
  await stopAllCli();
  await s.close();
});

const admin = { "content-type": "application/json", authorization: `Bearer ${ADMIN}` };

async function post(path: string, body: string, headers: Record<string, string> = {}): Promise<{ status: number; body: any }> {
  const res = await fetch(new URL(path, base), { method: "POST", headers: { ...admin, ...headers }, body });
  const text = await res.text();
  try {
    return { status: res.status, body: JSON.parse(text) };
  } catch {
    return { status: res.status, body: text };
  }
}

/** A raw connection to the service: what it answers, and when it closes. */
function rawConnection(): { socket: Socket; answer: Promise<string>; closed: Promise<number> } {
  const socket = connect(Number(base.port), base.hostname);
  let received = "";
  const answer = new Promise<string>((resolve) => socket.on("data", (d: Buffer) => resolve((received += d.toString("latin1")))));
  const started = Date.now();
  const closed = new Promise<number>((resolve) => socket.on("close", () => resolve(Date.now() - started)));
  socket.on("error", () => {});
  return { socket, answer, closed };
}

function rssKiB(pid: number): number {
  const status = readFileSync(`/proc/${pid}/status`, "utf8");
  return Number(/VmRSS:\s+(\d+)/.exec(status)![1]);
}

describe("hostile requests", () => {
  it("a body nested deeper than the bound is 400 naming where, with or without an Idempotency-Key (it was a 500)", async () => {
    const deep = (n: number) => `${"[".repeat(n)}${"]".repeat(n)}`;
    for (const headers of [{ "idempotency-key": `deep-${Date.now()}` }, {}] as Array<Record<string, string>>) {
      const top = await post("/v1/sandcastle-runs", deep(100_000), headers);
      expect(top.status).toBe(400);
      expect(top.body).toMatchObject({
        error: "invalid_request",
        problems: [{ field: "(top level)", problem: `is nested deeper than ${JSON_MAX_DEPTH} levels` }],
      });
    }
    const inField = await post("/v1/margot-intents", `{"interaction_id":"i-1","body":${deep(JSON_MAX_DEPTH + 1)}}`, {
      "idempotency-key": `deep-field-${Date.now()}`,
    });
    expect(inField).toMatchObject({ status: 400, body: { problems: [{ field: "body", problem: `is nested deeper than ${JSON_MAX_DEPTH} levels` }] } });
    // At the bound it is read (and refused by the schema, naming the field).
    const atBound = await post("/v1/margot-intents", `{"interaction_id":"i-1","body":${deep(JSON_MAX_DEPTH - 1)}}`);
    expect(atBound.status).toBe(400);
    expect(atBound.body.problems.map((p: { field: string }) => p.field)).toContain("body");
  });

  it("an admin's 100 MB body: 413 once the limit is passed, the connection closed, the rest never read", async () => {
    const before = rssKiB(service.pid);
    const total = 100 * 1024 * 1024;
    const { socket, answer, closed } = rawConnection();
    socket.write(
      `POST /v1/sandcastle-runs HTTP/1.1\r\nHost: ${base.host}\r\nAuthorization: Bearer ${ADMIN}\r\nContent-Type: application/json\r\nContent-Length: ${total}\r\n\r\n`,
    );
    const chunk = Buffer.alloc(64 * 1024, 0x20);
    let written = 0;
    let open = true;
    void closed.then(() => (open = false));
    while (open && written < total) {
      if (!socket.write(chunk)) await Promise.race([new Promise((r) => socket.once("drain", r)), closed]);
      written += chunk.length;
    }
    expect(await answer).toMatch(/^HTTP\/1\.1 413 /);
    await closed;
    // What the kernel's socket buffers took before the close, not the 100 MB a server reading the whole body would take.
    expect(written).toBeLessThan(32 * 1024 * 1024);
    expect(rssKiB(service.pid) - before).toBeLessThan(50 * 1024);
    // A body without Content-Length (chunked) is cut off the same way.
    const chunked = rawConnection();
    chunked.socket.write(
      `POST /v1/sandcastle-runs HTTP/1.1\r\nHost: ${base.host}\r\nAuthorization: Bearer ${ADMIN}\r\nContent-Type: application/json\r\nTransfer-Encoding: chunked\r\n\r\n`,
    );
    let sent = 0;
    let chunkedOpen = true;
    void chunked.closed.then(() => (chunkedOpen = false));
    while (chunkedOpen && sent < total) {
      if (!chunked.socket.write(`${chunk.length.toString(16)}\r\n${chunk.toString("latin1")}\r\n`))
        await Promise.race([new Promise((r) => chunked.socket.once("drain", r)), chunked.closed]);
      sent += chunk.length;
    }
    expect(await chunked.answer).toMatch(/^HTTP\/1\.1 413 /);
    expect(sent).toBeLessThan(32 * 1024 * 1024);
    expect(sent).toBeGreaterThan(API_BODY_LIMIT_BYTES);
  });

  it("a body sent too slowly is answered 408 and its connection closed within the request bound (Node's default held it 300 s)", async () => {
    const { socket, answer, closed } = rawConnection();
    socket.write(
      `POST /v1/sandcastle-runs HTTP/1.1\r\nHost: ${base.host}\r\nAuthorization: Bearer ${ADMIN}\r\nContent-Type: application/json\r\nContent-Length: 100\r\n\r\n{"session`,
    );
    const ms = await Promise.race([closed, new Promise<number>((r) => setTimeout(() => r(Infinity), 15_000))]);
    expect(ms).toBeLessThan((REQUEST_TIMEOUT_S + 3) * 1000);
    expect(await answer).toMatch(/^HTTP\/1\.1 408 /);
    // Headers that never end are bounded too.
    const slow = rawConnection();
    slow.socket.write(`GET /healthz HTTP/1.1\r\nHost: ${base.host}\r\nX-Slow: a`);
    const headerMs = await Promise.race([slow.closed, new Promise<number>((r) => setTimeout(() => r(Infinity), 15_000))]);
    expect(headerMs).toBeLessThan((REQUEST_TIMEOUT_S + 3) * 1000);
  });

  it("Idempotency-Key: the same JSON with its keys in another order is the same request; another value is not", async () => {
    const key = { "idempotency-key": `canon-${Date.now()}` };
    const id = `canon-${Date.now()}`;
    const first = await post(
      "/v1/margot-intents",
      `{"interaction_id":"${id}","body":"What's new in Next.js 15?","originated_at":"2026-09-17T03:04:05Z","originating_session_id":"s1"}`,
      key,
    );
    expect(first.status).toBe(201);
    const reordered = await post(
      "/v1/margot-intents",
      `{ "originating_session_id": "s1", "originated_at": "2026-09-17T03:04:05Z",\n "body": "What's new in Next.js 15?", "interaction_id": "${id}" }`,
      key,
    );
    expect(reordered).toEqual({ status: 201, body: first.body }); // a replay answers as the first did (Idempotent-Replayed)
    const other = await post(
      "/v1/margot-intents",
      `{"originating_session_id":"s2","originated_at":"2026-09-17T03:04:05Z","body":"What's new in Next.js 15?","interaction_id":"${id}"}`,
      key,
    );
    expect(other.status).toBe(422);
  });
});
