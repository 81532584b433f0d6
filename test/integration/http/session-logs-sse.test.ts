// GET /v1/sessions/:id/logs: real SSE clients read a session's log while a real run (the built-in child on
// the real Sandcastle library, script agent, temp git repo) writes it: backlog, live lines, resume, end.
import { writeFileSync } from "node:fs";
import { join, resolve } from "node:path";
import { afterEach, beforeEach, describe, expect, it } from "vitest";
import { CliProcess, stopAllCli, waitFor } from "../../helpers/cli.js";
import { makeGitRepo, RunScope } from "../../helpers/run-scope.js";
import { lineText, SseReader } from "../../helpers/sse-reader.js";

const SLOW_LINES = resolve(import.meta.dirname, "../../fixtures/sandcastle/slow-lines");
const TOKEN = "sse-admin-token-0123456789";
let s: RunScope;
let base: string;
let repo: string;
const readers: SseReader[] = [];

beforeEach(async () => {
  s = new RunScope();
  repo = join(s.dir.path, "repo");
  makeGitRepo(repo);
  const service = new CliProcess(["start"], s.env({ SANDCASTLE_BIN: "", PORT: "0", SCQ_API_TOKEN: TOKEN }));
  await service.waitForOutput(/Bull Board at (http:\/\/\S+)\/admin\/queues/);
  base = /Bull Board at (http:\/\/\S+)\/admin\/queues/.exec(service.stdout)![1]!;
  await service.waitForOutput(/workers \+ http running/);
});
afterEach(async () => {
  for (const r of readers.splice(0)) r.close();
  await stopAllCli();
  await s.close();
});

const auth = { authorization: `Bearer ${TOKEN}`, "content-type": "application/json" };
const reader = (path: string, opts: { lastEventId?: string } = {}) => {
  const r = new SseReader(`${base}${path}`, TOKEN, opts);
  readers.push(r);
  return r;
};

describe("live session logs over SSE", () => {
  it("backlog, then live lines as the run writes them, one event per line; resumable; a final event at the run's end", async () => {
    const request = s.request({ session_id: "sse-live", prompt_template_dir: SLOW_LINES, repo_workdir: repo, branch: "agent/sse-live" });
    const created = await fetch(`${base}/v1/sandcastle-runs`, { method: "POST", headers: auth, body: JSON.stringify(request) });
    expect(created.status).toBe(201);
    const { job_id: runId } = (await created.json()) as { job_id: string };
    const logs = `/v1/sessions/sse-live/logs`;

    // A reads from before the run writes anything.
    const a = reader(logs);
    await a.waitForLine("early line 3", 60_000);
    // B connects later: the early lines come from the stored backlog, then it follows live.
    const b = reader(logs);
    await b.waitForLine("early line 3");
    writeFileSync(join(s.outDir, "go"), "");
    await a.waitForLine("late line 3");
    await b.waitForLine("late line 3");
    // The agent is held before its commit: these lines arrived while the run was still running.
    const job = (await (await fetch(`${base}/v1/jobs/sandcastle-run/${runId}`, { headers: auth })).json()) as { state: string; phase: string };
    expect(job).toMatchObject({ state: "active", phase: "running" });
    writeFileSync(join(s.outDir, "finish"), "");
    await a.waitForEnd();
    await b.waitForEnd();

    const ours = (lines: string[]) => lines.filter((l) => /^(early|late) line \d$|^committed slow\.txt$/.test(l));
    const expected = ["early line 1", "early line 2", "early line 3", "late line 1", "late line 2", "late line 3", "committed slow.txt"];
    expect(ours(a.lines())).toEqual(expected);
    expect(ours(b.lines())).toEqual(expected);
    expect(a.events.map((e) => e.type).filter((t) => t !== "line")).toEqual(["run-queued", "run-started", "run-ended", "end"]);
    expect(JSON.parse(a.events.find((e) => e.type === "run-ended")!.data)).toMatchObject({ run_id: runId, status: "ok" });
    expect(JSON.parse(a.events.at(-1)!.data)).toEqual({ runs: [runId] });
    // One event per line, each with its own id, in order.
    const ids = a.events.filter((e) => e.type !== "end").map((e) => e.id);
    expect(new Set(ids).size).toBe(ids.length);

    // Resume after "early line 2": exactly what followed it.
    const after = a.events.find((e) => lineText(e.data) === "early line 2")!.id;
    const c = reader(logs, { lastEventId: after });
    await c.waitForEnd();
    expect(lineText(c.events[0]!.data)).toBe("early line 3");
    expect(c.lines()).toEqual(a.lines().slice(a.lines().indexOf("early line 3")));

    // Reconnecting after the end: 204, which tells an EventSource to stop.
    const lastId = a.events.filter((e) => e.type !== "end").at(-1)!.id;
    const d = await fetch(`${base}${logs}`, { headers: { ...auth, "last-event-id": lastId } });
    expect(d.status).toBe(204);
  });

  it("follows one run with ?run_id=, answers 404 for an unknown session and 400 for a bad Last-Event-ID", async () => {
    expect((await fetch(`${base}/v1/sessions/no-such-session/logs`, { headers: auth })).status).toBe(404);
    expect((await fetch(`${base}/v1/sessions/no-such-session/logs`)).status).toBe(401);
    const request = s.request({ session_id: "sse-one", prompt_template_dir: SLOW_LINES, repo_workdir: repo, branch: "agent/sse-one" });
    writeFileSync(join(s.outDir, "go"), "");
    writeFileSync(join(s.outDir, "finish"), "");
    const created = (await (await fetch(`${base}/v1/sandcastle-runs`, { method: "POST", headers: auth, body: JSON.stringify(request) })).json()) as {
      job_id: string;
      links: { logs: string };
    };
    expect((await fetch(`${base}/v1/sessions/sse-one/logs`, { headers: { ...auth, "last-event-id": "garbage" } })).status).toBe(400);
    const r = reader(created.links.logs);
    await r.waitForEnd();
    expect(r.lines(), JSON.stringify(r.events)).toContain("committed slow.txt");
    // The end is announced once the job has its result: no polling.
    expect(await (await fetch(`${base}/v1/jobs/sandcastle-run/${created.job_id}`, { headers: auth })).json()).toMatchObject({
      state: "completed",
      result: { status: "ok" },
    });
  });
});
