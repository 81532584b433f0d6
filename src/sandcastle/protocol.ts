// The child's stdout, read by the worker: the agent's own lines as it printed them, and between them
// the child's records — a line that starts with RS (0x1E, a byte no agent prints at a line's start:
// the child replaces it there) followed by one JSON object. The last record is `run_complete`.
//   \x1e{"type":"phase","phase":"run","status":"started"|"ok"|"failed","branch":"…","implementer":1?,"message":"…"?}
//   \x1e{"type":"tool_call","phase":"implement","implementer":2?,"name":"Bash","args":"…"}
//   \x1e{"type":"log","level":"info"|"warn"|"error","message":"…"}   (the child's notes, Sandcastle's console output)
//   \x1e{"type":"refused","phase":"run","implementer":1?,"branch":"…","changes":["moved refs/heads/main",…]}
//   \x1e{"type":"agent","phase":"run","implementer":1?,"kind":"tool_result"|"error"|"result","text":"…"}   (a real agent's CLI, read)
//   \x1e{"type":"egress","host":"…","port":443,"decision":"allowed"|"denied","failed":"…"?}   (the egress proxy, ADR 0035)
//   \x1e{"type":"usage","phase":"run","implementer":1?,"input_tokens":…,"output_tokens":…,
//        "cache_read_input_tokens":…,"cache_creation_input_tokens":…,"turns":…}   (a delta; not shown)
//   \x1e{"type":"run_complete","result":{branch,commits:[{sha}],merged_branch,status,failure_reason,message}}
// One marker byte keeps the worker's fast path cheap: a block of lines holding no 0x1E is all agent text.
import { z } from "zod";
import { formatIssues } from "../invalid-input.js";
import { ChildRunComplete } from "./contract.js";

export const RECORD_MARK = "\u001e";
export const RECORD_MARK_BYTE = 0x1e;
/** What an agent's line that starts with RS gets instead (U+241E SYMBOL FOR RECORD SEPARATOR). */
export const MARK_STAND_IN = "\u241e";

export const PHASES = ["run", "plan", "implement", "review", "merge"] as const;
export type Phase = (typeof PHASES)[number];
export const PHASE_STATUSES = ["started", "ok", "failed"] as const;
export type PhaseStatus = (typeof PHASE_STATUSES)[number];
export const LOG_LEVELS = ["info", "warn", "error"] as const;
export type LogLevel = (typeof LOG_LEVELS)[number];

const Origin = { phase: z.enum(PHASES), implementer: z.number().int().positive().optional() };
export const PhaseRecord = z.object({
  type: z.literal("phase"),
  ...Origin,
  status: z.enum(PHASE_STATUSES),
  branch: z.string(),
  message: z.string().optional(),
});
export const ToolCallRecord = z.object({ type: z.literal("tool_call"), ...Origin, name: z.string(), args: z.string() });
export const LogRecord = z.object({ type: z.literal("log"), level: z.enum(LOG_LEVELS), message: z.string() });
/** What an agent changed beyond its branch in its own repository: reported, never taken (ADR 0033). */
export const RefusedRecord = z.object({ type: z.literal("refused"), ...Origin, branch: z.string(), changes: z.array(z.string()) });
/** What a real agent's CLI said besides its text and tool calls (child/agent-output/, ADR 0034). */
export const AGENT_NOTE_KINDS = ["tool_result", "error", "result"] as const;
export const AgentNoteRecord = z.object({ type: z.literal("agent"), ...Origin, kind: z.enum(AGENT_NOTE_KINDS), text: z.string() });
/** A connection a run's container asked the egress proxy for, and what the proxy did (ADR 0035). */
export const EgressRecord = z.object({
  type: z.literal("egress"),
  host: z.string(),
  port: z.number().int(),
  decision: z.enum(["allowed", "denied"]),
  failed: z.string().optional(),
});
export type EgressRecord = z.infer<typeof EgressRecord>;
/** Every record but run_complete and usage: shown in the log as one short line. */
export const NoteRecord = z.discriminatedUnion("type", [PhaseRecord, ToolCallRecord, LogRecord, RefusedRecord, AgentNoteRecord, EgressRecord]);
const tokens = z.number().int().nonnegative();
/** Tokens an agent reported since the last usage record: the worker sums them (the result's `usage`, the budget). */
export const UsageRecord = z.object({
  type: z.literal("usage"),
  ...Origin,
  input_tokens: tokens,
  output_tokens: tokens,
  cache_read_input_tokens: tokens,
  cache_creation_input_tokens: tokens,
  turns: tokens,
});
export type UsageRecord = z.infer<typeof UsageRecord>;
export type NoteRecord = z.infer<typeof NoteRecord>;
export type ChildRecord = NoteRecord | UsageRecord | ChildRunComplete;

export function recordLine(record: ChildRecord): string {
  return `${RECORD_MARK}${JSON.stringify(record)}\n`;
}

/** A record as one readable log line. */
export function renderRecord(record: NoteRecord): string {
  if (record.type === "egress") {
    const target = `${record.host}:${record.port}`;
    return `── egress ${record.decision}: ${target}${record.decision === "denied" ? " (not on the run's allowlist)" : record.failed !== undefined ? ` (failed: ${record.failed})` : ""}`;
  }
  const who = `${record.type === "log" ? "" : record.phase}${record.type !== "log" && record.implementer !== undefined ? ` ${record.implementer}` : ""}`;
  switch (record.type) {
    case "phase":
      return `── ${who} ${record.status}${record.status === "started" ? ` on ${record.branch}` : ""}${record.message !== undefined ? `: ${record.message}` : ""}`;
    case "tool_call":
      return `── ${who} tool ${record.name} ${record.args}`;
    case "log":
      return `── sandcastle${record.level === "info" ? "" : ` ${record.level}`}: ${record.message}`;
    case "refused":
      return `── ${who} refused (not taken: the run changes only ${record.branch}): ${record.changes.join("; ")}`;
    case "agent":
      return `── ${who} ${record.kind === "tool_result" ? "tool result" : record.kind}: ${record.text}`;
  }
}

export type ReadRecord =
  | { kind: "run_complete"; outcome: RunCompleteOutcome }
  | { kind: "note"; record: NoteRecord }
  | { kind: "usage"; record: UsageRecord }
  | { kind: "unreadable"; problem: string };

export type RunCompleteOutcome = { ok: true; value: ChildRunComplete } | { ok: false; problem: string };

/** One record line (its RS included). `clean` sees the parsed JSON before it is checked: a redaction must never break a result. */
export function readRecord(line: string, clean: (value: unknown) => unknown = (v) => v): ReadRecord {
  let value: unknown;
  try {
    value = clean(JSON.parse(line.slice(1)));
  } catch {
    return { kind: "unreadable", problem: "not JSON" };
  }
  if ((value as { type?: unknown } | null)?.type === "run_complete") {
    const parsed = ChildRunComplete.safeParse(value);
    return { kind: "run_complete", outcome: parsed.success ? { ok: true, value: parsed.data } : { ok: false, problem: formatIssues(parsed.error) } };
  }
  if ((value as { type?: unknown } | null)?.type === "usage") {
    const usage = UsageRecord.safeParse(value);
    return usage.success ? { kind: "usage", record: usage.data } : { kind: "unreadable", problem: formatIssues(usage.error) };
  }
  const parsed = NoteRecord.safeParse(value);
  return parsed.success ? { kind: "note", record: parsed.data } : { kind: "unreadable", problem: formatIssues(parsed.error) };
}
