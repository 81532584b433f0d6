// The effect marks of every record written through one connection in one microtask turn (concurrent jobs'
// audit rows resolve together, as do the ledger rows of one fdatasync) leave as one script call: one command
// and one reply for them all, not an HSET per record.
import { isoTime } from "../../iso-time.js";
import type { RedisClient } from "../../redis/connect.js";
import { RedisScript } from "../../redis/script.js";

/**
 * KEYS: the records' hashes, all in one hash slot. ARGV[1] the time of the marks, then for each key in
 * order: how many fields, and the fields. Each field is set to the time.
 */
const SET_MARKS = new RedisScript(`
local at = ARGV[1]
local a = 2
for _, key in ipairs(KEYS) do
  local n = tonumber(ARGV[a])
  local fv = {}
  for j = 1, n do
    fv[2 * j - 1] = ARGV[a + j]
    fv[2 * j] = at
  end
  redis.call('HSET', key, unpack(fv))
  a = a + n + 1
end
return #KEYS
`);

/** Where a mark waits to be sent: the fields of this turn's records, by hash slot (the key's hash tag). */
class MarkBatch {
  private bySlot = new Map<string, Map<string, string[]>>();
  private sending: Promise<void> | null = null;

  constructor(private readonly redis: RedisClient) {}

  /** Adds the field to the turn's write; resolves when that write has been answered (it never rejects). */
  add(key: string, field: string): Promise<void> {
    const slot = hashTag(key);
    let records = this.bySlot.get(slot);
    if (!records) this.bySlot.set(slot, (records = new Map()));
    const fields = records.get(key);
    if (fields) fields.push(field);
    else records.set(key, [field]);
    this.sending ??= new Promise<void>((resolve) =>
      queueMicrotask(() => {
        const slots = this.bySlot;
        this.bySlot = new Map();
        this.sending = null;
        const at = isoTime();
        const writes = [...slots.values()].map((slotRecords) => {
          const args = [at, ...[...slotRecords.values()].flatMap((f) => [String(f.length), ...f])];
          return SET_MARKS.run(this.redis, [...slotRecords.keys()], args).catch(() => {});
        });
        void Promise.all(writes).then(() => resolve());
      }),
    );
    return this.sending;
  }
}

const batches = new WeakMap<object, MarkBatch>();

/** The connection's batch of marks (one per client). */
export function markBatch(redis: RedisClient): MarkBatch {
  let batch = batches.get(redis);
  if (!batch) batches.set(redis, (batch = new MarkBatch(redis)));
  return batch;
}

/** What Redis Cluster places a key by: its `{…}` hash tag, else the whole key. */
function hashTag(key: string): string {
  const open = key.indexOf("{");
  const close = open < 0 ? -1 : key.indexOf("}", open + 1);
  return close > open + 1 ? key.slice(open + 1, close) : key;
}
