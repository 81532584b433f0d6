// Effects done once per record (ADR 0004): each effect (an audit row, a ledger row, a notice) is marked
// `fx:<name>` in the record's hash as soon as it succeeded, so a retry after a crash repeats at most the
// effects whose mark was not written yet, never skips one. The effects of one step run together; nobody
// waits for a mark (ADR 0025), and the marks of one turn, of every record, leave in one command (effect-marks.ts).
import type { RedisClient } from "../../redis/connect.js";
import { markBatch } from "./effect-marks.js";

export type Effect = readonly [name: string, run: () => Promise<unknown>];

const FIELD = "fx:";

export class EffectLog {
  /** The last mark write sent (a failure path waits for it). */
  private sent: Promise<unknown> = Promise.resolve();

  private constructor(
    private readonly redis: RedisClient,
    readonly key: string,
    private readonly done: Set<string>,
  ) {}

  /** The marks among the fields of a hash already read (HGETALL). */
  static fromHash(redis: RedisClient, key: string, hash: Readonly<Record<string, string>>): EffectLog {
    const done = new Set<string>();
    for (const field of Object.keys(hash)) if (field.startsWith(FIELD)) done.add(field.slice(FIELD.length));
    return new EffectLog(redis, key, done);
  }

  /** A record with no marks yet (just created). */
  static fresh(redis: RedisClient, key: string): EffectLog {
    return new EffectLog(redis, key, new Set());
  }

  /**
   * Runs the effects not done yet, together: the effects of one step never depend on each other (rows in
   * different files, a notice). When one fails, the error goes on once the others have settled and their
   * marks are written.
   */
  async run(effects: readonly Effect[]): Promise<void> {
    const pending = effects.filter(([name]) => !this.done.has(name));
    const settled = await Promise.allSettled(
      pending.map(async ([name, effect]) => {
        await effect();
        this.mark(name);
      }),
    );
    const failed = settled.find((s): s is PromiseRejectedResult => s.status === "rejected");
    if (failed) {
      await this.sent;
      throw failed.reason;
    }
  }

  /** One effect: false when it was done already. */
  async once(name: string, effect: () => Promise<unknown>): Promise<boolean> {
    if (this.done.has(name)) return false;
    await this.run([[name, effect]]);
    return true;
  }

  /** Fields written into the record beside the marks, after every mark sent so far (one connection keeps order). */
  async record(fields: Readonly<Record<string, string>>): Promise<void> {
    const pairs = Object.entries(fields).flat();
    if (pairs.length > 0) await this.redis.hset(this.key, ...pairs);
  }

  /**
   * Sends the mark before anything this job sends next on the connection, with the other marks done in
   * the same turn, and does not wait for the reply: a retry comes only after this job failed or died,
   * later than the write. A mark lost because Redis went away right then repeats its effect once on a
   * retry, as a crash before it would.
   */
  private mark(name: string): void {
    this.done.add(name);
    this.sent = markBatch(this.redis).add(this.key, `${FIELD}${name}`);
  }
}
