// A run's agent output on its way to the session log (ADR 0034). For a real agent, every line its CLI prints
// comes through Sandcastle's `raw` stream event and is read by that CLI's reader: its text as the agent's lines,
// tool calls and results, errors, its end and its tokens as records; Sandcastle's own text and tool-call events
// are not printed (they would say the same twice, and lose pi's tool calls). The `script` agent's lines are
// Sandcastle's text events, as before. A key the endpoint refuses (401, 403) never works on a retry: the run is
// stopped at the first, model_auth_failed.
import type { SandcastleRunRequest } from "../../contract.js";
import type { EventOrigin, EventPrinter, StreamEvent } from "../events.js";
import { RunFailure } from "../run-failure.js";
import type { ModelAgent } from "../agents.js";
import { claudeReader } from "./claude.js";
import { codexReader } from "./codex.js";
import { opencodeReader } from "./opencode.js";
import type { OutputItem, OutputReader } from "./output-item.js";
import { piReader } from "./pi.js";

const READERS: Readonly<Record<ModelAgent, () => OutputReader>> = { claudeCode: claudeReader, codex: codexReader, pi: piReader, opencode: opencodeReader };
/** The errors a failure message may quote: the last few. */
const KEPT_ERRORS = 8;

export type AgentError = Extract<OutputItem, { kind: "error" }>;

export class AgentOutput {
  private readonly errorsSeen: AgentError[] = [];
  private fatal = false;
  /** One reader per phase: a CLI's stream is read in order, and phases run at once in the parallel planner. */
  private readonly readers = new Map<string, OutputReader>();

  constructor(
    private readonly agent: SandcastleRunRequest["agent"],
    private readonly printer: EventPrinter,
    /** Called once with a failure that no retry can mend (the run is stopped). */
    private readonly onFatal: (failure: RunFailure) => void,
    private readonly keyVar: string | null = null,
  ) {}

  /** The errors the agent reported, the last KEPT_ERRORS. */
  get errors(): readonly AgentError[] {
    return this.errorsSeen;
  }

  event(origin: EventOrigin, event: StreamEvent): void {
    if (this.agent === "script") {
      this.printer.agentEvent(origin, event);
      return;
    }
    if (event.type !== "raw") return;
    const key = `${origin.phase}/${origin.implementer ?? 0}`;
    let reader = this.readers.get(key);
    if (reader === undefined) {
      reader = READERS[this.agent]();
      this.readers.set(key, reader);
    }
    for (const item of reader(event.line)) this.print(origin, item);
  }

  private print(origin: EventOrigin, item: OutputItem): void {
    switch (item.kind) {
      case "text":
        this.printer.agentEvent(origin, { type: "text", message: item.text, iteration: 1, timestamp: new Date() });
        break;
      case "tool":
        this.printer.agentEvent(origin, { type: "toolCall", name: item.name, formattedArgs: item.args, iteration: 1, timestamp: new Date() });
        break;
      case "tool_result":
        this.printer.agentNote(origin, "tool_result", `${item.error ? "(failed) " : ""}${item.text}`);
        break;
      case "result":
        this.printer.agentNote(origin, "result", item.text);
        break;
      case "usage":
        this.printer.usage(origin, item.usage);
        break;
      case "error":
        this.printer.agentNote(origin, "error", item.text);
        this.errorsSeen.push(item);
        if (this.errorsSeen.length > KEPT_ERRORS) this.errorsSeen.shift();
        if ((item.status === 401 || item.status === 403) && !this.fatal) {
          this.fatal = true;
          this.onFatal(
            new RunFailure(
              "model_auth_failed",
              `the model endpoint refused the key (${item.status}): ${item.text}${this.keyVar ? `; check ${this.keyVar} in the run's env manifest` : ""}`,
            ),
          );
        }
        break;
    }
  }
}
