// What the child prints on stdout (protocol.ts): the agent's text as lines, everything else as
// records, the last one `run_complete`. Every free-text field of the child's own goes through the
// SecretScrubber first; nothing is printed after run_complete. The agent's own stream on the host
// (agent-stream.ts) comes in as bytes, scrubbed there, and goes out as it is.
import { format } from "node:util";
import { ChildRunComplete } from "../contract.js";
import {
  MARK_STAND_IN, RECORD_MARK, RECORD_MARK_BYTE, recordLine, type AGENT_NOTE_KINDS, type ChildRecord, type LogLevel, type Phase, type PhaseStatus,
} from "../protocol.js";
import type { TokenUsage } from "./agent-output/output-item.js";

type AgentNoteKind = (typeof AGENT_NOTE_KINDS)[number];
import type { SecretScrubber } from "./secret-scrubber.js";

export type RunCompleteResult = ChildRunComplete["result"];
export type { LogLevel, Phase, PhaseStatus };

/** What Sandcastle hands `logging.onAgentStreamEvent` (0.12.0). */
export type StreamEvent =
  | { readonly type: "text"; readonly message: string; readonly iteration: number; readonly timestamp: Date }
  | { readonly type: "toolCall"; readonly name: string; readonly formattedArgs: string; readonly iteration: number; readonly timestamp: Date }
  | { readonly type: "raw"; readonly line: string; readonly iteration: number; readonly timestamp: Date };

export interface EventOrigin {
  readonly phase: Phase;
  readonly implementer?: number;
}

const ANSI = /\u001b\[[0-9;?]*[ -/]*[@-~]/g;

/** A foreign partial line longer than this is emitted without waiting for its newline. */
const MAX_PENDING = 64 * 1024;

type Write = typeof process.stdout.write;

const NEWLINE = 0x0a;
const STAND_IN = Buffer.from(MARK_STAND_IN);

export class EventPrinter {
  private completed = false;
  /** The last byte out was a newline: a record may start here. */
  private atLineStart = true;
  private readonly rawWrite: (chunk: string | Uint8Array, done?: () => void) => boolean;
  private readonly pending = new Map<LogLevel, string>();
  private readonly dropFilters: Array<(line: string) => boolean> = [];

  constructor(private scrubber: SecretScrubber) {
    const stdout = process.stdout;
    const original = stdout.write as (chunk: string | Uint8Array, done?: () => void) => boolean;
    this.rawWrite = (chunk, done) => original.call(stdout, chunk, done);
    // The worker may be gone (EPIPE); a dead reader must not crash the child.
    stdout.on("error", () => {});
  }

  get isComplete(): boolean {
    return this.completed;
  }

  useScrubber(scrubber: SecretScrubber): void {
    this.scrubber = scrubber;
  }

  /** Sandcastle's text events as the agent's lines, tool calls as records; `raw` (the provider's wire protocol) is not printed. */
  agentEvent(origin: EventOrigin, event: StreamEvent): void {
    if (event.type === "text") {
      const text = event.message.endsWith("\n") ? event.message.slice(0, -1) : event.message;
      const lines = this.clean(text)
        .split("\n")
        .map((line) => (line.startsWith(RECORD_MARK) ? MARK_STAND_IN + line.slice(1) : line));
      this.emit(`${lines.join("\n")}\n`);
    } else if (event.type === "toolCall") {
      this.write({ type: "tool_call", ...origin, name: this.clean(event.name), args: this.clean(event.formattedArgs) });
    }
  }

  /** The agent's own stdout, as it comes (agent-stream.ts): passed on unchanged but for RS at a line's start. */
  agentBytes(chunk: Buffer): void {
    if (this.completed || chunk.length === 0) return;
    const out = chunk.includes(RECORD_MARK_BYTE) ? this.standIn(chunk) : chunk;
    this.atLineStart = out[out.length - 1] === NEWLINE;
    this.rawWrite(out);
  }

  /** stdout holds bytes it could not hand to the OS yet. */
  get stdoutBusy(): boolean {
    return process.stdout.writableLength > 0;
  }

  /** Resolves once everything written so far has been handed to the OS (or stdout failed). */
  flushed(): Promise<void> {
    return new Promise((resolve) => {
      try {
        this.rawWrite("", () => resolve());
      } catch {
        resolve();
      }
    });
  }

  /** An agent's stream ended: a last line without its newline is ended here. */
  endAgentLine(): void {
    if (!this.atLineStart) this.emit("\n");
  }

  private standIn(chunk: Buffer): Buffer {
    const parts: Buffer[] = [];
    let from = 0;
    for (let at = chunk.indexOf(RECORD_MARK_BYTE); at !== -1; at = chunk.indexOf(RECORD_MARK_BYTE, at + 1)) {
      const lineStart = at === 0 ? this.atLineStart : chunk[at - 1] === NEWLINE;
      if (!lineStart) continue;
      parts.push(chunk.subarray(from, at), STAND_IN);
      from = at + 1;
    }
    parts.push(chunk.subarray(from));
    return Buffer.concat(parts);
  }

  phase(origin: EventOrigin, status: PhaseStatus, branch: string, message?: string): void {
    this.write({
      type: "phase",
      phase: origin.phase,
      ...(origin.implementer !== undefined ? { implementer: origin.implementer } : {}),
      status,
      branch,
      ...(message !== undefined ? { message: this.clean(message) } : {}),
    });
  }

  /** A real agent's tool result, error or end, read from its CLI (agent-output/). */
  agentNote(origin: EventOrigin, kind: AgentNoteKind, text: string): void {
    const clean = this.clean(text).trim();
    if (clean.length > 0) this.write({ type: "agent", ...origin, kind, text: clean });
  }

  /** A connection the egress proxy allowed or denied (ADR 0035). */
  egress(host: string, port: number, allowed: boolean, failed?: string): void {
    this.write({
      type: "egress",
      host: this.clean(host),
      port,
      decision: allowed ? "allowed" : "denied",
      ...(failed !== undefined ? { failed: this.clean(failed) } : {}),
    });
  }

  /** Tokens the agent reported since the last record (a delta); the worker sums them. */
  usage(origin: EventOrigin, usage: TokenUsage): void {
    this.write({ type: "usage", ...origin, ...usage });
  }

  /** What the agent changed beyond its branch (refused-changes.ts): one record, names only. */
  refused(origin: EventOrigin, branch: string, changes: readonly string[]): void {
    this.write({ type: "refused", ...origin, branch, changes: changes.map((c) => this.clean(c)) });
  }

  log(level: LogLevel, message: string): void {
    const text = this.clean(message).trim();
    if (text.length > 0) this.write({ type: "log", level, message: text });
  }

  /**
   * Everything else that would reach stdout or stderr — Sandcastle's console notes, its clack
   * warnings — becomes `log` records, so nothing reaches stdout but through this printer, and
   * nothing interleaves from stderr.
   */
  captureOutput(): void {
    const to = (level: LogLevel) => (...args: unknown[]) => {
      for (const line of format(...args).split("\n")) this.foreignLine(level, line);
    };
    console.log = to("info");
    console.info = to("info");
    console.debug = to("info");
    console.warn = to("warn");
    console.error = to("error");
    process.stdout.write = this.foreignWriter("info");
    process.stderr.write = this.foreignWriter("error");
  }

  private foreignWriter(level: LogLevel): Write {
    const write = (chunk: unknown, encoding?: unknown, callback?: unknown): boolean => {
      const text = typeof chunk === "string" ? chunk : Buffer.from(chunk as Uint8Array).toString("utf8");
      let pending = (this.pending.get(level) ?? "") + text;
      let newline: number;
      while ((newline = pending.indexOf("\n")) >= 0) {
        this.foreignLine(level, pending.slice(0, newline));
        pending = pending.slice(newline + 1);
      }
      if (pending.length > MAX_PENDING) {
        this.foreignLine(level, pending);
        pending = "";
      }
      this.pending.set(level, pending);
      const done = typeof encoding === "function" ? encoding : callback;
      if (typeof done === "function") queueMicrotask(() => (done as () => void)());
      return true;
    };
    return write as Write;
  }

  /** Foreign lines matching `filter` are not printed. */
  dropForeign(filter: (line: string) => boolean): void {
    this.dropFilters.push(filter);
  }

  private foreignLine(level: LogLevel, line: string): void {
    // clack's gutter ("│") carries no information.
    const text = line.replace(ANSI, "").replace(/^[\s│]+/, "").trimEnd();
    if (text.length === 0 || this.dropFilters.some((drop) => drop(text))) return;
    this.log(level, text);
  }

  private flushForeign(): void {
    for (const [level, pending] of this.pending) if (pending.length > 0) this.foreignLine(level, pending);
    this.pending.clear();
  }

  /** Prints the final line once; later calls are ignored. Returns whether this call printed it. */
  runComplete(result: RunCompleteResult): boolean {
    if (this.completed) return false;
    this.flushForeign();
    const cleaned: RunCompleteResult = {
      ...result,
      message: result.message == null ? null : this.clean(result.message),
    };
    const parsed = ChildRunComplete.safeParse({ type: "run_complete", result: cleaned });
    const line = parsed.success
      ? parsed.data
      : {
          type: "run_complete" as const,
          result: {
            branch: cleaned.branch,
            commits: [],
            merged_branch: null,
            status: "failed" as const,
            failure_reason: "bad_result" as const,
            message: `the child built an invalid run_complete: ${parsed.error.issues.map((i) => `${i.path.join(".")}: ${i.message}`).join("; ")}`,
          },
        };
    this.write(line);
    this.completed = true;
    return true;
  }

  private clean(text: string): string {
    return this.scrubber.scrub(text.replace(ANSI, ""));
  }

  private write(record: ChildRecord): void {
    // A record starts a line: an agent's unfinished line (no newline yet) is ended first.
    this.emit(`${this.atLineStart ? "" : "\n"}${recordLine(record)}`);
  }

  private emit(text: string): void {
    if (this.completed) return;
    this.atLineStart = true;
    try {
      this.rawWrite(text);
    } catch {
      // stdout gone: nothing left to tell.
    }
  }
}
