// The `script` agent on the host writes its stdout into a FIFO in the run's directory; the child
// reads it and passes the bytes on to its own stdout in whole lines, the run's secret values scrubbed
// — past Sandcastle, whose per-line handling (an Effect and a log-file append per line) holds an
// agent to 1–2 k lines/s (ADR 0014).
// Sandcastle still runs the agent, feeds its prompt, sees its exit and stderr, and collects commits.
import { execFileSync } from "node:child_process";
import { closeSync, constants, openSync, rmSync } from "node:fs";
import { Socket } from "node:net";
import { join } from "node:path";
import type { EventPrinter } from "./events.js";
import type { SecretScrubber } from "./secret-scrubber.js";

export const AGENT_FIFO = "agent-stdout";
/** After the agent exits, a process it left in the background may hold the FIFO open: read no longer than this. */
const END_TIMEOUT_MS = 2000;
/** An unfinished line waits for its newline up to this size; a longer one goes out in pieces (memory stays bounded). */
const MAX_HELD = 64 * 1024;
const NEWLINE = 0x0a;

export class AgentStream {
  private holdFd: number | null;
  private readonly reader: Socket;
  private readonly ended: Promise<void>;
  private closed = false;
  /** The unfinished last line (a copy), sent with its newline: a secret is never cut in two by a chunk's end. */
  private held: Buffer | null = null;

  private constructor(
    readonly path: string,
    private readonly printer: EventPrinter,
    private readonly scrubber: SecretScrubber,
  ) {
    execFileSync("mkfifo", ["-m", "600", path]);
    // Non-blocking opens never wait for the other side. The child holds a write end itself until the
    // agent has finished: otherwise the read side would see end-of-file before the agent opened it.
    const readFd = openSync(path, constants.O_RDONLY | constants.O_NONBLOCK);
    this.holdFd = openSync(path, constants.O_WRONLY | constants.O_NONBLOCK);
    this.reader = new Socket({ fd: readFd, readable: true, writable: false });
    this.ended = new Promise((resolve) => {
      this.reader.once("end", resolve);
      this.reader.once("close", resolve);
      this.reader.once("error", () => resolve());
    });
    this.reader.on("data", (chunk: Buffer) => {
      if (this.pass(this.lines(chunk))) return;
      // stdout is full (the worker reads slower): stop reading, so the agent waits rather than memory grows.
      this.reader.pause();
      void this.printer.drained().then(() => this.reader.resume());
    });
  }

  /** A FIFO in `runDir` (0700) the agent's stdout goes to. */
  static open(runDir: string, printer: EventPrinter, scrubber: SecretScrubber): AgentStream {
    return new AgentStream(join(runDir, AGENT_FIFO), printer, scrubber);
  }

  /** What of `chunk` (after what was held) can go out now: up to its last newline. */
  private lines(chunk: Buffer): Buffer {
    const data = this.held === null ? chunk : Buffer.concat([this.held, chunk]);
    this.held = null;
    const rest = data.length - (data.lastIndexOf(NEWLINE) + 1);
    if (rest === 0 || rest > MAX_HELD) return data;
    this.held = Buffer.from(data.subarray(data.length - rest));
    return data.subarray(0, data.length - rest);
  }

  private pass(data: Buffer): boolean {
    return data.length === 0 || this.printer.agentBytes(this.scrubber.scrubBytes(data));
  }

  /** The agent has exited: read what is left, end its last line, remove the FIFO. Safe to call twice. */
  async close(): Promise<void> {
    if (this.closed) return;
    this.closed = true;
    if (this.holdFd !== null) closeSync(this.holdFd);
    this.holdFd = null;
    let timer: NodeJS.Timeout | undefined;
    await Promise.race([this.ended, new Promise((resolve) => (timer = setTimeout(resolve, END_TIMEOUT_MS)))]);
    clearTimeout(timer);
    this.reader.destroy();
    if (this.held !== null) this.pass(this.held);
    this.held = null;
    this.printer.endAgentLine();
    rmSync(this.path, { force: true });
  }

  /** Exit path (synchronous): let go of the FIFO. */
  dispose(): void {
    if (this.holdFd !== null) closeSync(this.holdFd);
    this.holdFd = null;
    this.reader.destroy();
    rmSync(this.path, { force: true });
  }
}
