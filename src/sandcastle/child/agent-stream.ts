// The `script` agent on the host writes its stdout into a FIFO in the run's directory; the child
// reads it and passes the bytes on to its own stdout in whole lines, the run's secret values scrubbed
// — past Sandcastle, whose per-line handling (an Effect and a log-file append per line) bounds how
// fast an agent's lines get through (ADR 0014). Sandcastle still runs the agent, feeds its prompt, sees its exit
// and stderr, and collects commits.
//
// No allocation per read: the FIFO is read into one reused buffer, passed on as views of it; reading
// stops until stdout has taken a view that it had to queue (the buffer is not overwritten under it).
// Only a line that spans reads is copied (it is kept until its newline, up to MAX_LINE).
import { execFileSync } from "node:child_process";
import { closeSync, constants, openSync, rmSync } from "node:fs";
import { Socket } from "node:net";
import { join } from "node:path";
import { characterBoundary, MAX_LINE_BYTES, truncationMarker } from "../line-splitter.js";
import type { EventPrinter } from "./events.js";
import type { SecretScrubber } from "./secret-scrubber.js";

export const AGENT_FIFO = "agent-stdout";
/** After the agent exits, a process it left in the background may hold the FIFO open: read no longer than this. */
const END_TIMEOUT_MS = 2000;
/**
 * A line longer than this is cut here with the worker's marker and the rest of it only counted (the
 * worker would cut it anyway: a 50 MB line costs neither side 50 MB). Room is left for the marker, so
 * the worker's splitter keeps the line as it is.
 */
const MAX_LINE = MAX_LINE_BYTES - 128;
const READ_BUFFER = 64 * 1024;
const NEWLINE = 0x0a;
const NEWLINE_BYTE = Buffer.from("\n");

export class AgentStream {
  private holdFd: number | null;
  private readonly reader: Socket;
  private readonly ended: Promise<void>;
  private closed = false;
  /** The unfinished last line (a copy), sent with its newline: a secret is never cut in two by a read's end. */
  private held: Buffer | null = null;
  /** Bytes dropped of the current line, once it is over MAX_LINE; null when not cutting. */
  private dropped: number | null = null;

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
    this.reader = new Socket({
      fd: readFd,
      readable: true,
      writable: false,
      onread: { buffer: Buffer.allocUnsafe(READ_BUFFER), callback: (n: number, buffer: Buffer) => this.take(buffer.subarray(0, n)) },
    });
    this.ended = new Promise((resolve) => {
      this.reader.once("end", resolve);
      this.reader.once("close", resolve);
      this.reader.once("error", () => resolve());
    });
  }

  /** A FIFO in `runDir` (0700) the agent's stdout goes to. */
  static open(runDir: string, printer: EventPrinter, scrubber: SecretScrubber): AgentStream {
    return new AgentStream(join(runDir, AGENT_FIFO), printer, scrubber);
  }

  /** One read (a view of the reused buffer). Returns false to stop reading until stdout has taken it. */
  private take(chunk: Buffer): boolean {
    let from = 0;
    while (from < chunk.length) {
      const newline = chunk.indexOf(NEWLINE, from);
      const lineEnd = newline === -1 ? chunk.length : newline;
      if (this.dropped !== null) {
        this.dropped += lineEnd - from;
        if (newline === -1) break;
        this.passText(`${truncationMarker(this.dropped)}\n`);
        this.dropped = null;
      } else if (this.held !== null) {
        const line = Buffer.concat([this.held, chunk.subarray(from, lineEnd)]);
        this.held = null;
        if (line.length > MAX_LINE) this.cut(line);
        else if (newline === -1) this.held = line;
        else this.pass(Buffer.concat([line, NEWLINE_BYTE]));
        if (this.dropped !== null && newline !== -1) {
          this.passText(`${truncationMarker(this.dropped)}\n`);
          this.dropped = null;
        }
      } else {
        // At a line's start: every whole line of the read goes out as one view (a read is no longer than a
        // line may be), the unfinished one is kept.
        const last = chunk.lastIndexOf(NEWLINE);
        if (last >= from) this.pass(chunk.subarray(from, last + 1));
        const rest = chunk.subarray(last >= from ? last + 1 : from);
        if (rest.length > MAX_LINE) this.cut(rest);
        else if (rest.length > 0) this.held = Buffer.from(rest);
        break;
      }
      if (newline === -1) break;
      from = newline + 1;
    }
    if (!this.printer.stdoutBusy) return true;
    // stdout queued part of a view of the buffer (the worker reads slower): wait until it is written.
    void this.printer.flushed().then(() => this.reader.resume());
    return false;
  }

  /** The start of an over-long line goes out (cut at a character's start); the rest of it is counted. */
  private cut(line: Buffer): void {
    const kept = characterBoundary(line, MAX_LINE);
    this.pass(line.subarray(0, kept));
    this.dropped = line.length - kept;
  }

  private passText(text: string): void {
    this.printer.agentBytes(Buffer.from(text, "utf8"));
  }

  private pass(data: Buffer): void {
    if (data.length > 0) this.printer.agentBytes(this.scrubber.scrubBytes(data));
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
    if (this.dropped !== null) this.passText(truncationMarker(this.dropped));
    this.held = null;
    this.dropped = null;
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
