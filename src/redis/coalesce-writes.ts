// The writes of one turn of the event loop (effect marks, the Margot stores' scripts of concurrent jobs) share one
// system call: the connection's socket is corked until the turn's check phase, then written at once. Each write
// to Redis's socket costs a system call and a wake-up of redis-server; a reply waits at most until that phase.
import { Redis } from "ioredis";
import type { RedisClient } from "./connect.js";

const corked = new WeakSet<object>();

/** Corks this connection's socket until setImmediate, once per turn; a Cluster or an unconnected client is left as it is. */
export function coalesceWrites(redis: RedisClient): void {
  if (!(redis instanceof Redis) || redis.status !== "ready") return;
  const socket = (redis as unknown as { stream?: { cork(): void; uncork(): void; destroyed?: boolean } }).stream;
  if (!socket || socket.destroyed || corked.has(socket)) return;
  corked.add(socket);
  socket.cork();
  setImmediate(() => {
    corked.delete(socket);
    socket.uncork();
  });
}
