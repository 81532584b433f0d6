// Tails MARGOT_COMPLETE_PATH (Pi-CEO's margot_complete.jsonl, one MargotResearchCompletion per
// line) and hands each completion to `enqueue` exactly once:
//   - the offset (with the file's inode) is kept in Redis after every batch, so a restart resumes;
//     a line read twice after a crash is still one job (job id = interaction id) and one decision
//     (the intent record), so at-least-once reading is exactly-once enqueueing
//   - rotation (a new inode at the path): the old file is drained to its end first (kept open, or
//     found again as `<path>.1` after a restart), then the new file is read from 0
//   - truncation (same inode, smaller than the offset): read again from 0
//   - a torn last line (no newline yet) waits for its newline; at rotation it is tried as is
//   - a malformed line (bad JSON, wrong fields, too long) is skipped with a logged reason, never stops
// Only one process tails a path at a time (a Redis lease), so two `start`s do not race the offset.
import { createHash, randomBytes } from "node:crypto";
import { open, stat, type FileHandle } from "node:fs/promises";
import { resolve } from "node:path";
import type { RedisClient } from "../../redis/connect.js";
import { formatIssues, parseWithWording } from "../../invalid-input.js";
import type { Logger } from "../../log.js";
import { MargotResearchCompletion } from "../contract.js";

/** A line longer than this is skipped (bounded memory whatever the file holds). */
export const MAX_LINE_BYTES = 4 * 1024 * 1024;
const CHUNK_BYTES = 256 * 1024;
const LEASE_MS = 15_000;

/**
 * KEYS[1]  lease key   ARGV[1] owner token   ARGV[2] lease (ms)
 * Returns  1 when the caller holds the lease (taken or renewed), 0 when another owner does.
 */
const LEASE = `
local owner = redis.call('GET', KEYS[1])
if owner and owner ~= ARGV[1] then return 0 end
redis.call('SET', KEYS[1], ARGV[1], 'PX', tonumber(ARGV[2]))
return 1
`;

export interface TailerDeps {
  readonly redis: RedisClient;
  readonly prefix: string;
  readonly path: string;
  readonly pollMs: number;
  readonly enqueue: (completion: MargotResearchCompletion) => Promise<void>;
  readonly log: Logger;
}

export interface TailerStats {
  enqueued: number;
  skipped: number;
}

interface Position {
  ino: number;
  offset: number;
}

export class CompletionTailer {
  private readonly stateKey: string;
  private readonly leaseKey: string;
  private readonly owner = randomBytes(8).toString("hex");
  private readonly path: string;
  private timer: NodeJS.Timeout | null = null;
  private running: Promise<void> | null = null;
  private stopped = false;
  private fh: FileHandle | null = null;
  private position: Position | null = null;
  /** Skipping the rest of an oversized line: resume after its newline. */
  private skipping = false;
  readonly stats: TailerStats = { enqueued: 0, skipped: 0 };

  constructor(private readonly deps: TailerDeps) {
    this.path = resolve(deps.path);
    const id = createHash("sha256").update(this.path).digest("hex").slice(0, 16);
    this.stateKey = `${deps.prefix}:margot:tail:${id}`;
    this.leaseKey = `${deps.prefix}:margot:tail:${id}:lease`;
  }

  start(): void {
    this.deps.log.info({ path: this.path }, "tailing Margot completions");
    const tick = () => {
      if (this.stopped) return;
      this.running = this.tick()
        .catch((err: Error) => this.deps.log.error({ err: err.message, path: this.path }, "completion tailer pass failed; will retry"))
        .finally(() => {
          if (!this.stopped) this.timer = setTimeout(tick, this.deps.pollMs);
        });
    };
    tick();
  }

  async stop(): Promise<void> {
    this.stopped = true;
    if (this.timer) clearTimeout(this.timer);
    await this.running;
    await this.closeFile();
    await this.deps.redis
      .eval(`if redis.call('GET', KEYS[1]) == ARGV[1] then return redis.call('DEL', KEYS[1]) end return 0`, 1, this.leaseKey, this.owner)
      .catch(() => {});
  }

  /** One pass: hold the lease, follow rotation/truncation, read what is new. */
  async tick(): Promise<void> {
    const held = await this.deps.redis.eval(LEASE, 1, this.leaseKey, this.owner, String(LEASE_MS));
    if (held !== 1) {
      await this.closeFile();
      return;
    }
    let st;
    try {
      st = await stat(this.path);
    } catch (err) {
      if ((err as NodeJS.ErrnoException).code === "ENOENT") return; // not there yet, or mid-rotation
      throw err;
    }
    if (this.fh === null || this.position === null) {
      await this.resumeFromRedis(st.ino);
    } else if (st.ino !== this.position.ino) {
      // Rotated while we held the old file open: finish it, then start the new one.
      await this.readAvailable(true);
      await this.closeFile();
      await this.openAt(st.ino, 0);
    }
    const size = (await this.fh!.stat()).size;
    if (size < this.position!.offset) {
      this.deps.log.warn({ path: this.path, offset: this.position!.offset, size }, "completion file was truncated; reading it again from the start");
      this.position!.offset = 0;
      this.skipping = false;
      await this.save();
    }
    await this.readAvailable(false);
  }

  private async resumeFromRedis(ino: number): Promise<void> {
    const saved = await this.deps.redis.hgetall(this.stateKey);
    const savedIno = saved.ino === undefined ? null : Number(saved.ino);
    const savedOffset = Number(saved.offset ?? 0);
    if (savedIno !== null && savedIno !== ino) {
      // Rotated while no one tailed: the previous file, if it is still around as <path>.1, is finished first.
      const rotated = `${this.path}.1`;
      const old = await stat(rotated).catch(() => null);
      if (old && old.ino === savedIno) {
        this.deps.log.info({ path: rotated }, "finishing the rotated completion file");
        this.fh = await open(rotated, "r");
        this.position = { ino: savedIno, offset: savedOffset };
        await this.readAvailable(true);
        await this.closeFile();
      } else {
        this.deps.log.warn({ path: this.path }, "completion file was replaced while no tailer ran; reading the new file from the start");
      }
      await this.openAt(ino, 0);
      return;
    }
    await this.openAt(ino, savedIno === ino ? savedOffset : 0);
  }

  private async openAt(ino: number, offset: number): Promise<void> {
    this.fh = await open(this.path, "r");
    const actual = (await this.fh.stat()).ino;
    this.position = { ino: actual, offset: actual === ino ? offset : 0 };
    this.skipping = false;
    await this.save();
  }

  private async closeFile(): Promise<void> {
    const fh = this.fh;
    this.fh = null;
    this.position = null;
    if (fh) await fh.close().catch(() => {});
  }

  private async save(): Promise<void> {
    if (!this.position) return;
    await this.deps.redis.hset(this.stateKey, "ino", String(this.position.ino), "offset", String(this.position.offset), "path", this.path);
  }

  /** Read complete lines from the offset to the end; `final`: the file will not grow, so a torn tail is taken as is. */
  private async readAvailable(final: boolean): Promise<void> {
    const fh = this.fh!;
    const pos = this.position!;
    let pending = Buffer.alloc(0);
    let pendingStart = pos.offset;
    let readAt = pos.offset;
    for (;;) {
      if (this.stopped) return;
      const chunk = Buffer.alloc(CHUNK_BYTES);
      const { bytesRead } = await fh.read(chunk, 0, CHUNK_BYTES, readAt);
      if (bytesRead === 0) break;
      readAt += bytesRead;
      pending = pending.length === 0 ? chunk.subarray(0, bytesRead) : Buffer.concat([pending, chunk.subarray(0, bytesRead)]);
      let start = 0;
      for (let nl = pending.indexOf(0x0a, start); nl !== -1; nl = pending.indexOf(0x0a, start)) {
        const line = pending.subarray(start, nl);
        const lineOffset = pendingStart + start;
        start = nl + 1;
        if (this.skipping) {
          this.skipping = false;
        } else {
          await this.handleLine(line, lineOffset);
        }
        pos.offset = pendingStart + start;
      }
      pending = pending.subarray(start);
      pendingStart += start;
      if (pending.length > MAX_LINE_BYTES) {
        if (!this.skipping) this.skip(pendingStart, `line longer than ${MAX_LINE_BYTES} bytes`);
        this.skipping = true;
        pos.offset = pendingStart + pending.length;
        pendingStart = pos.offset;
        pending = Buffer.alloc(0);
      }
      await this.save();
    }
    if (final && pending.length > 0 && !this.skipping) {
      await this.handleLine(pending, pendingStart, " (torn last line of a rotated file)");
      pos.offset = pendingStart + pending.length;
      await this.save();
    }
  }

  private async handleLine(line: Buffer, offset: number, note = ""): Promise<void> {
    const text = line.toString("utf8").replace(/\r$/, "");
    if (text.trim() === "") return;
    let json: unknown;
    try {
      json = JSON.parse(text);
    } catch {
      // JSON.parse's message quotes the text: say only that it is not JSON.
      this.skip(offset, `not JSON (${line.length} bytes)${note}`);
      return;
    }
    const parsed = parseWithWording(MargotResearchCompletion, json);
    if (!parsed.success) {
      this.skip(offset, `not a MargotResearchCompletion: ${formatIssues(parsed.error)}${note}`);
      return;
    }
    await this.deps.enqueue(parsed.data);
    this.stats.enqueued += 1;
  }

  /** The line's content is not logged: research bodies carry PII. */
  private skip(offset: number, reason: string): void {
    this.stats.skipped += 1;
    this.deps.log.warn({ path: this.path, offset, reason }, "skipped a line of the Margot completion file");
  }
}
