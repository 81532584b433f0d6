// A session log's lines are the agent's or the service's own (`── run ok: …`, `── run started on …`, `── run tool …`,
// the child's notes). An agent line must never pass for one of ours, so each kind has a form the other cannot take
// (ADR 0045):
//   stored (Redis, SSE, log_tail, the retained session.log): ours start with RS (U+001E); an agent's line never
//     holds a control character at all (visible-controls.ts), so it cannot start with one.
//   displayed (`logs`, `enqueue --wait`, the job's log in Bull Board): ours as they read, an agent's behind a gutter
//     (`│ `) it cannot get out of: it has no CR, no cursor move, no newline to get back to the start of a line.
import { showControls } from "./visible-controls.js";

/** What starts a stored service line: the child's record marker, a byte no stored agent line holds. */
export const SERVICE_MARK = "\u001e";
/** What a displayed agent line starts with: a displayed line starting otherwise is the service's. */
export const AGENT_GUTTER = "│ ";

/** One of the service's lines as stored: marked, its text (agent-given parts included) with controls shown. */
export function serviceLine(text: string): string {
  return `${SERVICE_MARK}${showControls(text)}`;
}

/** An agent's line as stored: controls shown, so it holds none (and no mark). */
export function agentLine(text: string): string {
  return showControls(text);
}

export function isServiceLine(stored: string): boolean {
  return stored.startsWith(SERVICE_MARK);
}

/** A stored line as machines get it (SSE): unchanged, but for a line an older version stored with raw controls. */
export function storedLine(stored: string): string {
  return isServiceLine(stored) ? serviceLine(stored.slice(1)) : agentLine(stored);
}

/** A stored line as people see it: ours as it reads, an agent's behind the gutter; never a control character. */
export function displayLine(stored: string): string {
  return isServiceLine(stored) ? showControls(stored.slice(1)) : `${AGENT_GUTTER}${showControls(stored)}`;
}
