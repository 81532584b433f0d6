// The child's stdout protocol: one JSON object per line (`{"type": ...}`), anything else is plain text;
// the last `run_complete` line carries the result.
import { formatIssues } from "../invalid-input.js";
import { ChildRunComplete } from "./contract.js";

export type ParsedLine = { kind: "text" } | { kind: "event"; event: Record<string, unknown> & { type: string } };

export function parseChildLine(raw: string): ParsedLine {
  if (raw.length === 0 || raw[0] !== "{") return { kind: "text" };
  try {
    const value: unknown = JSON.parse(raw);
    if (value !== null && typeof value === "object" && !Array.isArray(value) && typeof (value as { type?: unknown }).type === "string") {
      return { kind: "event", event: value as Record<string, unknown> & { type: string } };
    }
  } catch {
    // not JSON: plain text
  }
  return { kind: "text" };
}

export type RunCompleteOutcome = { ok: true; value: ChildRunComplete } | { ok: false; problem: string };

export function readRunComplete(event: unknown): RunCompleteOutcome {
  const parsed = ChildRunComplete.safeParse(event);
  return parsed.success ? { ok: true, value: parsed.data } : { ok: false, problem: formatIssues(parsed.error) };
}
