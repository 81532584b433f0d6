// Writes that nobody waits for (effect marks) may share one system call with the others sent in the same turn
// of the event loop: the connection's socket is corked until the turn's check phase, then written at once.
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
