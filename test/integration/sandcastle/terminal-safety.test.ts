// An agent that prints what steers a terminal (OSC 52 to the clipboard, OSC 8 links, a title, cursor moves, erases,
// a bare CR, BEL, NUL, DEL, a C1 CSI, bidi overrides) and lines that imitate the service's own (`── run ok: 9
// commit(s)`, a kill, a start, a refusal, a tool call; plain, after a CR, after a cursor move, after an RS). A real
// service (workers + HTTP), the real child and Sandcastle, the built CLI in a pseudo-terminal (script(1)).
// Guarantee (ADR 0045): no control character of the agent's reaches the terminal through `enqueue --wait` or `logs`
// (each is shown, `^[`, `^M`, `<U+202E>`); the service's own lines cannot be forged — stored, over SSE and in the
// result's log_tail they alone start with RS, and on the terminal and in the job's log an agent's line is behind `│ `.
import { writeFileSync } from "node:fs";
import { join, resolve } from "node:path";
import { afterEach, beforeEach, describe, expect, it } from "vitest";
import { SandcastleRunResult } from "../../../src/sandcastle/contract.js";
import { readSessionLog, sessionLogKey } from "../../../src/session-log/session-log.js";
import { stopAllCli, TerminalCli } from "../../helpers/cli.js";
import { startService } from "../../helpers/http-service.js";
import { makeGitRepo, RunScope } from "../../helpers/run-scope.js";
import { SseReader } from "../../helpers/sse-reader.js";

const HOSTILE = resolve(import.meta.dirname, "../../fixtures/sandcastle/hostile-output");
const TOKEN = "terminal-safety-admin-token-0123";
/** What a terminal acts on besides printable text (TAB and the pty's CRLF aside). */
const CONTROL = /[\x00-\x08\x0b-\x1f\x7f-\x9f\u061c\u200e\u200f\u2028-\u202e\u2066-\u2069]/;
const RS = "\u001e";

/** The agent's lines as shown (the agent printed them with raw controls). */
const SHOWN = [
  "clipboard ^[]52;c;ZXZpbA==^G written",
  "a ^[]8;;https://evil.example/^[\\link^[]8;;^[\\ here",
  "^[]0;pwned title^Gtitle set",
  "moves ^[[2A^[[10;10H^[[1G and erases ^[[2J^[[K^[[3J",
  "innocent text^Mmalicious overwrite",
  "bell ^G nul ^@ del ^? end",
  "c1 csi <U+009B>2J done",
  "bidi <U+202E>gnp.exe<U+202C> and <U+2066>isolate<U+2069>",
];
/** The agent's imitations of the service's lines, as stored (the child puts U+241E for a leading RS). */
const IMITATIONS = [
  "── run ok: 9 commit(s)",
  "── run killed (cancelled): stopped: cancelled by cli:root",
  "── run started on main",
  "── run refused (not taken: the run changes only main): moved refs/heads/main",
  "── run tool Bash rm -rf /",
  "x^M── run ok: 9 commit(s)",
  "^[[1G── run killed (kill_switch_mid_run): by an agent",
  "␞── run ok: 9 commit(s)",
];

let s: RunScope;
let base: string;
let repo: string;
beforeEach(async () => {
  s = new RunScope();
  repo = join(s.dir.path, "repo");
  makeGitRepo(repo);
  ({ base } = await startService("start", s.env({ SANDCASTLE_BIN: "", PORT: "0", SCQ_API_TOKEN: TOKEN })));
});
afterEach(async () => {
  await stopAllCli();
  await s.close();
});

/** A terminal's output as lines: the pty ends each with CRLF; any other CR is one the agent would have used. */
function terminalLines(output: Buffer): string[] {
  const lines = output.toString("utf8").split("\r\n");
  for (const line of lines) expect(line, "a control character (a bare CR included) reached the terminal").not.toMatch(CONTROL);
  return lines;
}

/** Stored lines (Redis, SSE, log_tail): ours start with RS, an agent's hold no control; the genuine ones are the only marked ones. */
function expectStoredForm(lines: readonly string[], where: string): void {
  for (const line of lines) if (!line.startsWith(RS)) expect(line, `${where}: an agent line holding a control`).not.toMatch(CONTROL);
  const ours = lines.filter((l) => l.startsWith(RS)).map((l) => l.slice(1));
  for (const line of ours) expect(line, `${where}: a service line`).toMatch(/^── /);
  expect(ours.filter((l) => l.includes("9 commit(s)")), `${where}: a forged end`).toEqual([]);
  expect(ours.filter((l) => /^── run (killed|started on main|refused|tool Bash rm)/.test(l)), `${where}: forged service lines`).toEqual([]);
  for (const line of [...SHOWN, ...IMITATIONS]) expect(lines, `${where}: the agent's line, shown, unmarked`).toContain(line);
}

describe("agent output on an operator's terminal", () => {
  it("enqueue --wait and logs in a pseudo-terminal, the stored log, SSE, log_tail and the job's log: no control obeyed, no service line forged", async () => {
    const session = "terminal-safety";
    const file = join(s.dir.path, "request.json");
    writeFileSync(file, JSON.stringify(s.request({ session_id: session, prompt_template_dir: HOSTILE, repo_workdir: repo, branch: "agent/hostile" })));

    const waiting = new TerminalCli(["enqueue", "sandcastle-run", "--request", file, "--wait"], s.env({ SANDCASTLE_BIN: "" }));
    // The agent holds after its lines: --wait shows them while the run is live.
    await waiting.waitForOutput("␞── run ok: 9 commit(s)", 120_000);
    writeFileSync(join(s.outDir, "go"), "");
    expect(await waiting.exit(120_000), waiting.output.toString()).toBe(0);
    const waitLines = terminalLines(waiting.output);
    const result = SandcastleRunResult.parse(JSON.parse(waitLines.filter((l) => l.startsWith("{")).at(-1)!));
    expect(result).toMatchObject({ status: "ok", branch: "agent/hostile" });
    // --wait's progress (stderr, on a terminal): the agent's lines behind the gutter, ours at the margin.
    for (const line of SHOWN) expect(waitLines).toContain(`  │ ${line}`);
    for (const line of IMITATIONS) expect(waitLines).toContain(`  │ ${line}`);
    expect(waitLines.filter((l) => /^ {2}── .*9 commit\(s\)|^ {2}── run (killed|started on main|refused|tool Bash rm)/.test(l))).toEqual([]);

    const logs = new TerminalCli(["logs", session], s.env());
    expect(await logs.exit()).toBe(0);
    const logLines = terminalLines(logs.output).filter((l) => l !== "");
    for (const line of logLines) expect(line, "a displayed line is ours (──) or behind the gutter").toMatch(/^(── |│ )/);
    for (const line of [...SHOWN, ...IMITATIONS]) expect(logLines).toContain(`│ ${line}`);
    expect(logLines.filter((l) => /^── .*9 commit\(s\)|^── run (killed|started on main|refused|tool Bash rm)/.test(l))).toEqual([]);
    expect(logLines.at(-1)).toBe(`── run ok${result.message ? `: ${result.message}` : ""}`);

    const stored = await readSessionLog(s.redis, sessionLogKey(s.prefix, session));
    expectStoredForm(stored, "the stored log");
    expect(stored.at(-1)).toBe(`${RS}── run ok${result.message ? `: ${result.message}` : ""}`);
    expectStoredForm(result.log_tail, "log_tail");
    expect(result.log_tail.at(-1)).toBe(stored.at(-1));

    const sse = new SseReader(`${base}/v1/sessions/${session}/logs`, TOKEN);
    try {
      await sse.waitForEnd();
      const data = sse.events.filter((e) => e.type === "line").map((e) => e.data);
      expect(data).toEqual(stored);
    } finally {
      sse.close();
    }
    const api = (await (await fetch(`${base}/v1/jobs/sandcastle-run/${result.run_id}`, { headers: { authorization: `Bearer ${TOKEN}` } })).json()) as {
      result: { log_tail: string[] };
    };
    expect(api.result.log_tail).toEqual(result.log_tail);

    // Bull Board's log of the job is for people too: as `logs` shows it.
    const jobLog = (await s.queue.getJobLogs(result.run_id)).logs.join("\n").split("\n");
    expect(jobLog).toEqual(logLines);
  }, 180_000);
});
