// The child's stdout, read by the worker: the agent's own lines as it printed them, and between them
// the child's records — a line that starts with RS (0x1E, a byte no agent prints at a line's start:
// the child replaces it there) followed by one JSON object. The last record is `run_complete`.
//   \x1e{"type":"phase","phase":"run","status":"started"|"ok"|"failed","branch":"…","implementer":1?,"message":"…"?}
//   \x1e{"type":"tool_call","phase":"implement","implementer":2?,"name":"Bash","args":"…"}
//   \x1e{"type":"log","level":"info"|"warn"|"error","message":"…"}   (the child's notes, Sandcastle's console output)
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
export const PhaseRecord = z.object({ type: z.literal("phase"), ...Origin, status: z.enum(PHASE_STATUSES), branch: z.string(), message: z.string().optional() });
export const ToolCallRecord = z.object({ type: z.literal("tool_call"), ...Origin, name: z.string(), args: z.string() });
export const LogRecord = z.object({ type: z.literal("log"), level: z.enum(LOG_LEVELS), message: z.string() });
/** Every record but run_complete: shown in the log as one short line. */
export const NoteRecord = z.discriminatedUnion("type", [PhaseRecord, ToolCallRecord, LogRecord]);
export type NoteRecord = z.infer<typeof NoteRecord>;
export type ChildRecord = NoteRecord | ChildRunComplete;

export function recordLine(record: ChildRecord): string {
  return `${RECORD_MARK}${JSON.stringify(record)}\n`;
}

/** A record as one readable log line. */
export function renderRecord(record: NoteRecord): string {
  const who = `${record.type === "log" ? "" : record.phase}${record.type !== "log" && record.implementer !== undefined ? ` ${record.implementer}` : ""}`;
  switch (record.type) {
    case "phase":
      return `── ${who} ${record.status}${record.status === "started" ? ` on ${record.branch}` : ""}${record.message !== undefined ? `: ${record.message}` : ""}`;
    case "tool_call":
      return `── ${who} tool ${record.name} ${record.args}`;
    case "log":
      return `── sandcastle${record.level === "info" ? "" : ` ${record.level}`}: ${record.message}`;
  }
}

export type ReadRecord =
  | { kind: "run_complete"; outcome: RunCompleteOutcome }
  | { kind: "note"; record: NoteRecord }
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
  const parsed = NoteRecord.safeParse(value);
  return parsed.success ? { kind: "note", record: parsed.data } : { kind: "unreadable", problem: formatIssues(parsed.error) };
}
