// The writes of one stretch of work (effect marks, the Margot stores' scripts of the jobs a batch of preparations
// or a reply let go) share one system call: the connection's socket is corked until the microtasks queued so far
// have run, then written at once. Each write to Redis's socket costs a system call and a wake-up of redis-server;
// holding it to the turn's check phase instead made every claim wait out the next turn's I/O (ADR 0025).
import { Redis } from "./ioredis.js";
import type { RedisClient } from "./connect.js";

const corked = new WeakSet<object>();

/** Corks this connection's socket until the microtasks queued so far have run; a Cluster or an unconnected client is left as it is. */
export function coalesceWrites(redis: RedisClient): void {
  if (!(redis instanceof Redis) || redis.status !== "ready") return;
  const socket = (redis as unknown as { stream?: { cork(): void; uncork(): void; destroyed?: boolean } }).stream;
  if (!socket || socket.destroyed || corked.has(socket)) return;
  corked.add(socket);
  socket.cork();
  queueMicrotask(() => {
    corked.delete(socket);
    socket.uncork();
  });
}
