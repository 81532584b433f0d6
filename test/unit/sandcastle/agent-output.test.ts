// Each real CLI's output, as it printed it against the fake model server (test/fixtures/agent-output: captured
// from claude 2.1.332, codex 0.171.0, pi 0.73.1 and opencode 1.18.33 in the sandbox image), read into log items:
// text, tool calls with their command, tool results' first lines, errors with their status, the end, the tokens.
import { readFileSync } from "node:fs";
import { resolve } from "node:path";
import { describe, expect, it } from "vitest";
import { claudeReader } from "../../../src/sandcastle/child/agent-output/claude.js";
import { codexReader, unwrap } from "../../../src/sandcastle/child/agent-output/codex.js";
import { opencodeReader } from "../../../src/sandcastle/child/agent-output/opencode.js";
import { shortArgs, type OutputItem, type OutputReader, type TokenUsage } from "../../../src/sandcastle/child/agent-output/output-item.js";
import { piReader } from "../../../src/sandcastle/child/agent-output/pi.js";

const FIXTURES = resolve(import.meta.dirname, "../../fixtures/agent-output");
const COMMAND = "echo hello > hello.txt && git add hello.txt && git -c user.name=a -c user.email=a@b commit -qm hello && echo committed";

function read(reader: OutputReader, fixture: string): OutputItem[] {
  return readFileSync(`${FIXTURES}/${fixture}`, "utf8")
    .split("\n")
    .filter((l) => l.length > 0)
    .flatMap((l) => reader(l));
}

function total(items: OutputItem[]): TokenUsage {
  const sum = { input_tokens: 0, output_tokens: 0, cache_read_input_tokens: 0, cache_creation_input_tokens: 0, turns: 0 };
  for (const item of items) if (item.kind === "usage") for (const k of Object.keys(sum) as Array<keyof TokenUsage>) sum[k] += item.usage[k];
  return sum;
}

const withoutUsage = (items: OutputItem[]) => items.filter((i) => i.kind !== "usage");

describe("reading the real CLIs' output", () => {
  it("claude: the tool call, its result, the text, the end; usage topped up to the session's own totals", () => {
    const items = read(claudeReader(), "claude.jsonl");
    expect(withoutUsage(items)).toEqual([
      { kind: "tool", name: "Bash", args: COMMAND },
      { kind: "tool_result", text: "committed", error: false },
      { kind: "text", text: "All done: hello.txt committed." },
      { kind: "result", text: "success after 2 turn(s)" },
    ]);
    expect(total(items)).toEqual({ input_tokens: 200, output_tokens: 40, cache_read_input_tokens: 14, cache_creation_input_tokens: 6, turns: 2 });
  });

  it("claude: each refused request is an error with its status (401), and a synthetic message is no usage", () => {
    const items = read(claudeReader(), "claude-401.jsonl");
    const errors = items.filter((i) => i.kind === "error");
    expect(errors.length).toBeGreaterThanOrEqual(10);
    expect(errors[0]).toMatchObject({ status: 401, text: expect.stringMatching(/authentication_failed; retry 1\/10/) });
    expect(total(items)).toMatchObject({ input_tokens: 0, output_tokens: 0, cache_read_input_tokens: 0, cache_creation_input_tokens: 0 });
  });

  it("codex: its command unwrapped from the login shell, a failed command's first line, the harmless metadata notice dropped", () => {
    const items = read(codexReader(), "codex.jsonl");
    expect(withoutUsage(items)).toEqual([
      { kind: "tool", name: "shell", args: COMMAND },
      { kind: "tool_result", text: "On branch master", error: true },
      { kind: "text", text: "All done: hello.txt committed." },
      { kind: "result", text: "turn completed" },
    ]);
    // input_tokens counts the cached ones: told apart.
    expect(total(items)).toEqual({ input_tokens: 200, output_tokens: 40, cache_read_input_tokens: 14, cache_creation_input_tokens: 0, turns: 1 });
  });

  it("codex: both quotings of its shell", () => {
    expect(unwrap("/bin/sh -lc 'it'\\''s'")).toBe("it's");
    expect(unwrap(`/bin/sh -lc "printf 'a\\\\n' > \\"x\\""`)).toBe(`printf 'a\\n' > "x"`);
    expect(unwrap("git status")).toBe("git status");
  });

  it("pi: its lower-case bash tool (which Sandcastle drops) and its result; usage per message, turns per turn", () => {
    const items = read(piReader(), "pi.jsonl");
    expect(withoutUsage(items)).toEqual([
      { kind: "tool", name: "bash", args: COMMAND },
      { kind: "tool_result", text: "committed", error: false },
      { kind: "text", text: "All done: hello.txt committed." },
      { kind: "result", text: "ended" },
    ]);
    expect(total(items)).toEqual({ input_tokens: 200, output_tokens: 40, cache_read_input_tokens: 14, cache_creation_input_tokens: 6, turns: 2 });
  });

  it("opencode: a completed tool use is the call and its result; usage per step", () => {
    const items = read(opencodeReader(), "opencode.jsonl");
    expect(withoutUsage(items)).toEqual([
      { kind: "tool", name: "bash", args: COMMAND },
      { kind: "tool_result", text: "committed", error: false },
      { kind: "text", text: "All done: hello.txt committed." },
      { kind: "result", text: "ended (stop)" },
    ]);
    expect(total(items).turns).toBe(2);
    expect(total(items).output_tokens).toBe(40);
  });

  it("a line that is not the CLI's JSON is its text; arguments are one short line", () => {
    expect(claudeReader()("plain words")).toEqual([{ kind: "text", text: "plain words" }]);
    expect(shortArgs({ command: "a\n  b" })).toBe("a b");
    expect(shortArgs({ file_path: "/x/y.ts", content: "…" })).toBe("/x/y.ts");
    expect(shortArgs({ cmd: ["bash", "-lc", "ls"] })).toBe("bash -lc ls");
    expect(shortArgs({ q: "x".repeat(500) }).length).toBeLessThanOrEqual(201);
  });
});
