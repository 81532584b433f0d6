// A Lua script sent by its SHA-1 (EVALSHA): the body goes over the wire only when the server does not
// know it yet (after a restart, on a new cluster node), not on every call. Calls made in one stretch of work
// (concurrent jobs' claims, their marks) leave in one write to the socket (coalesce-writes.ts).
import { createHash } from "node:crypto";
import { coalesceWrites } from "./coalesce-writes.js";
import type { RedisClient } from "./connect.js";

export class RedisScript {
  readonly sha: string;

  constructor(readonly lua: string) {
    this.sha = createHash("sha1").update(lua).digest("hex");
  }

  async run(redis: RedisClient, keys: readonly string[], args: readonly (string | number)[]): Promise<unknown> {
    coalesceWrites(redis);
    try {
      return await redis.evalsha(this.sha, keys.length, ...keys, ...args);
    } catch (err) {
      if (!(err instanceof Error) || !err.message.startsWith("NOSCRIPT")) throw err;
      return redis.eval(this.lua, keys.length, ...keys, ...args);
    }
  }
}

/** A hash as a script returns it (HGETALL inside Lua: a flat list of fields and values). */
export function hashFromReply(flat: readonly string[] | undefined): Record<string, string> {
  const hash: Record<string, string> = {};
  if (flat) for (let i = 0; i + 1 < flat.length; i += 2) hash[flat[i]!] = flat[i + 1]!;
  return hash;
}
