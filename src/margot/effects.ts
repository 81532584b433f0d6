// Effects done once per record (ADR 0004): each effect (an audit row, a ledger row, a notice) is marked
// `fx:<name>` in the record's hash after it succeeded, so a retry after a crash repeats at most the
// effects whose mark was not written yet, never skips one. The marks of one step go out in one write.
import type { RedisClient } from "../redis/connect.js";

export type Effect = readonly [name: string, run: () => Promise<unknown>];

const FIELD = "fx:";

export class EffectLog {
  private readonly ran: string[] = [];

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

  /** Runs, in order, each effect not done yet. When one fails, the marks of those that ran are written before the error goes on. */
  async run(effects: readonly Effect[]): Promise<void> {
    for (const [name, effect] of effects) {
      if (this.done.has(name)) continue;
      try {
        await effect();
      } catch (err) {
        await this.record().catch(() => {});
        throw err;
      }
      this.done.add(name);
      this.ran.push(name);
    }
  }

  /** Writes the marks of the effects that ran since the last record, with `fields` beside them, in one HSET. */
  async record(fields: Readonly<Record<string, string>> = {}): Promise<void> {
    const at = new Date().toISOString();
    const pairs: string[] = [];
    for (const name of this.ran.splice(0)) pairs.push(`${FIELD}${name}`, at);
    for (const [k, v] of Object.entries(fields)) pairs.push(k, v);
    if (pairs.length > 0) await this.redis.hset(this.key, ...pairs);
  }

  /** One effect, marked at once: for the steps that have a single effect. */
  async once(name: string, effect: () => Promise<unknown>): Promise<boolean> {
    if (this.done.has(name)) return false;
    await this.run([[name, effect]]);
    await this.record();
    return true;
  }
}
