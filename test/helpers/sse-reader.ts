// A real SSE client (the `eventsource` package, WHATWG EventSource semantics) reading a session's live log,
// recording every event it gets: lines (with ids), run markers, and the final `end`.
import { EventSource } from "eventsource";
import { waitFor } from "./cli.js";

export interface ReadEvent {
  readonly type: string;
  readonly id: string;
  readonly data: string;
}

export class SseReader {
  readonly events: ReadEvent[] = [];
  readonly statuses: number[] = [];
  private readonly source: EventSource;
  ended = false;
  errors = 0;

  constructor(url: string, token: string, opts: { lastEventId?: string } = {}) {
    this.source = new EventSource(url, {
      fetch: async (input, init) => {
        const headers: Record<string, string> = { ...(init.headers as Record<string, string>), authorization: `Bearer ${token}` };
        // The first request resumes where the test says; EventSource's own reconnects send theirs.
        if (opts.lastEventId !== undefined && headers["Last-Event-ID"] === undefined && headers["last-event-id"] === undefined)
          headers["last-event-id"] = opts.lastEventId;
        const res = await fetch(input, { ...init, headers });
        this.statuses.push(res.status);
        return res;
      },
    });
    const record = (type: string) => (e: MessageEvent) => this.events.push({ type, id: e.lastEventId, data: String(e.data) });
    this.source.addEventListener("message", record("line"));
    for (const type of ["run-queued", "run-started", "run-ended"]) this.source.addEventListener(type, record(type));
    this.source.addEventListener("end", (e) => {
      record("end")(e);
      this.ended = true;
      this.source.close();
    });
    this.source.addEventListener("error", () => {
      this.errors += 1;
    });
  }

  /** The text of each line event: an agent's own line, or the `text` of a child protocol line that wraps one. */
  lines(): string[] {
    return this.events.filter((e) => e.type === "line").map((e) => lineText(e.data));
  }

  async waitForLine(text: string, timeoutMs = 30_000): Promise<void> {
    await waitFor(() => this.lines().includes(text), timeoutMs, () => `line "${text}" (got ${JSON.stringify(this.lines())})`);
  }

  async waitForEnd(timeoutMs = 60_000): Promise<void> {
    await waitFor(() => this.ended, timeoutMs, () => `the end event (got ${JSON.stringify(this.events.map((e) => e.type))})`);
  }

  close(): void {
    this.source.close();
  }
}

export function lineText(line: string): string {
  if (!line.startsWith("{")) return line;
  try {
    const parsed = JSON.parse(line) as { text?: unknown };
    return typeof parsed.text === "string" ? parsed.text.replace(/\n$/, "") : line;
  } catch {
    return line;
  }
}
