// What a real agent's CLI printed, read into what a person following the run needs (ADR 0034): its text, each
// tool call with a short form of its arguments, each tool result's first line, errors, how it ended, and the
// tokens it reported. One reader per CLI (claude.ts, codex.ts, pi.ts, opencode.ts), each fed one stdout line
// at a time; a line that is not the CLI's JSON is the CLI's own text.

/** Tokens as the agents report them, summed by the worker: a delta per item. */
export interface TokenUsage {
  readonly input_tokens: number;
  readonly output_tokens: number;
  readonly cache_read_input_tokens: number;
  readonly cache_creation_input_tokens: number;
  /** Model turns as the agent counts them (claude's turns, codex's turns, pi's turns, opencode's steps). */
  readonly turns: number;
}

export type OutputItem =
  | { readonly kind: "text"; readonly text: string }
  | { readonly kind: "tool"; readonly name: string; readonly args: string }
  | { readonly kind: "tool_result"; readonly text: string; readonly error: boolean }
  /** `status`: the model endpoint's HTTP status when the agent says which. */
  | { readonly kind: "error"; readonly text: string; readonly status?: number }
  | { readonly kind: "result"; readonly text: string }
  | { readonly kind: "usage"; readonly usage: TokenUsage };

export type OutputReader = (line: string) => OutputItem[];

export const NO_USAGE: TokenUsage = { input_tokens: 0, output_tokens: 0, cache_read_input_tokens: 0, cache_creation_input_tokens: 0, turns: 0 };

const MAX_SHORT = 200;

/** One line, at most MAX_SHORT characters: what a log line shows of an argument or a result. */
export function short(text: string): string {
  const one = text.replace(/\s+/g, " ").trim();
  return one.length > MAX_SHORT ? `${one.slice(0, MAX_SHORT)}…` : one;
}

/** A tool result's first non-empty line, cut. */
export function headLine(text: string): string {
  return short(text.split("\n").find((l) => l.trim().length > 0) ?? "");
}

/** The argument a person recognises a call by (a command, a path, a pattern), else the arguments as JSON. */
export function shortArgs(input: unknown): string {
  if (typeof input === "string") return short(input);
  if (typeof input !== "object" || input === null) return "";
  const fields = input as Record<string, unknown>;
  for (const name of ["command", "cmd", "file_path", "filePath", "path", "pattern", "url", "description"]) {
    const value = fields[name];
    if (typeof value === "string") return short(value);
    if (Array.isArray(value) && value.every((v) => typeof v === "string")) return short(value.join(" "));
  }
  return short(JSON.stringify(input));
}

/** Parses a line that holds one JSON object; undefined for anything else. */
export function jsonLine(line: string): Record<string, unknown> | undefined {
  if (!line.startsWith("{")) return undefined;
  try {
    const value: unknown = JSON.parse(line);
    return typeof value === "object" && value !== null && !Array.isArray(value) ? (value as Record<string, unknown>) : undefined;
  } catch {
    return undefined;
  }
}

export const num = (value: unknown): number => (typeof value === "number" && Number.isFinite(value) && value > 0 ? value : 0);
export const str = (value: unknown): string | undefined => (typeof value === "string" ? value : undefined);
export const obj = (value: unknown): Record<string, unknown> => (typeof value === "object" && value !== null ? (value as Record<string, unknown>) : {});
export const arr = (value: unknown): unknown[] => (Array.isArray(value) ? value : []);

/** The text blocks of a message's content (a string, or an array of `{type: "text", text}` and others). */
export function textOf(content: unknown): string {
  if (typeof content === "string") return content;
  return arr(content)
    .map((c) => (obj(c).type === "text" ? (str(obj(c).text) ?? "") : ""))
    .join("");
}

export function usage(partial: Partial<TokenUsage>): OutputItem {
  return { kind: "usage", usage: { ...NO_USAGE, ...partial } };
}
