// The child's stdout protocol: one JSON object per line, the last one `run_complete`.
//   {"type":"agent_event","event":"text","phase":"run","iteration":1,"ts":"…","text":"…"}
//   {"type":"agent_event","event":"tool_call","phase":"implement","implementer":2,"iteration":1,"ts":"…","name":"Bash","args":"…"}
//   {"type":"phase","phase":"plan","status":"started"|"ok"|"failed","branch":"…","implementer":1?}
//   {"type":"log","level":"info"|"warn"|"error","message":"…"}   (the child's notes and Sandcastle's console output)
//   {"type":"run_complete","result":{branch,commits:[{sha}],merged_branch,status,failure_reason,message}}
// Every free-text field goes through the SecretScrubber first; nothing is printed after run_complete.
import { format } from "node:util";
import { ChildRunComplete } from "../contract.js";
import type { SecretScrubber } from "./secret-scrubber.js";

export type RunCompleteResult = ChildRunComplete["result"];
export type Phase = "run" | "plan" | "implement" | "review" | "merge";
export type PhaseStatus = "started" | "ok" | "failed";
export type LogLevel = "info" | "warn" | "error";

/** What Sandcastle hands `logging.onAgentStreamEvent` (0.12.0). */
export type StreamEvent =
  | { readonly type: "text"; readonly message: string; readonly iteration: number; readonly timestamp: Date }
  | { readonly type: "toolCall"; readonly name: string; readonly formattedArgs: string; readonly iteration: number; readonly timestamp: Date }
  | { readonly type: "raw"; readonly line: string; readonly iteration: number; readonly timestamp: Date };

export interface EventOrigin {
  readonly phase: Phase;
  readonly implementer?: number;
}

// eslint-disable-next-line no-control-regex
const ANSI = /\u001b\[[0-9;?]*[ -/]*[@-~]/g;

/** A foreign partial line longer than this is emitted without waiting for its newline. */
const MAX_PENDING = 64 * 1024;

type Write = typeof process.stdout.write;

export class EventPrinter {
  private completed = false;
  private readonly rawWrite: (text: string) => boolean;
  private readonly pending = new Map<LogLevel, string>();
  private readonly dropFilters: Array<(line: string) => boolean> = [];

  constructor(private scrubber: SecretScrubber) {
    const stdout = process.stdout;
    const original = stdout.write;
    this.rawWrite = (text) => original.call(stdout, text);
    // The worker may be gone (EPIPE); a dead reader must not crash the child.
    stdout.on("error", () => {});
  }

  get isComplete(): boolean {
    return this.completed;
  }

  useScrubber(scrubber: SecretScrubber): void {
    this.scrubber = scrubber;
  }

  /** Forwards Sandcastle's text and tool-call events; `raw` (the provider's wire protocol) is not printed. */
  agentEvent(origin: EventOrigin, event: StreamEvent): void {
    const base = {
      type: "agent_event",
      phase: origin.phase,
      ...(origin.implementer !== undefined ? { implementer: origin.implementer } : {}),
      iteration: event.iteration,
      ts: event.timestamp.toISOString(),
    };
    if (event.type === "text") {
      const text = event.message.endsWith("\n") ? event.message.slice(0, -1) : event.message;
      this.write({ ...base, event: "text", text: this.clean(text) });
    } else if (event.type === "toolCall") {
      this.write({ ...base, event: "tool_call", name: this.clean(event.name), args: this.clean(event.formattedArgs) });
    }
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

  log(level: LogLevel, message: string): void {
    const text = this.clean(message).trim();
    if (text.length > 0) this.write({ type: "log", level, message: text });
  }

  /**
   * Everything else that would reach stdout or stderr — Sandcastle's console notes, its clack
   * warnings — becomes `log` lines, so stdout stays one JSON object per line with run_complete
   * last, and nothing interleaves from stderr.
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

  private write(object: unknown): void {
    if (this.completed) return;
    try {
      this.rawWrite(`${JSON.stringify(object)}\n`);
    } catch {
      // stdout gone: nothing left to tell.
    }
  }
}
