// coalesceWrites on a real Redis: the commands of one stretch of work leave in one write to the socket, in order,
// and every one of them is answered; the socket is uncorked once the microtasks queued so far have run.
import type { Socket } from "node:net";
import { Redis } from "ioredis";
import { describe, expect, it } from "vitest";
import { coalesceWrites } from "../../../src/redis/coalesce-writes.js";
import { redisUrl, useRedisPrefix } from "../../helpers/scope.js";

/** The writes that reach the socket's own write functions (after Node's cork buffering), as chunk counts. */
function countWrites(socket: Socket): { writes: number[]; restore: () => void } {
  const writes: number[] = [];
  const writev = socket._writev?.bind(socket);
  const single = socket._write.bind(socket);
  socket._writev = (chunks, cb) => (writes.push(chunks.length), writev!(chunks, cb));
  socket._write = (chunk, enc, cb) => (writes.push(1), single(chunk, enc, cb));
  return {
    writes,
    restore: () => {
      socket._writev = writev as typeof socket._writev;
      socket._write = single;
    },
  };
}

describe("coalesceWrites (real Redis)", () => {
  const scope = useRedisPrefix();

  it("sends a turn's commands in one socket write, in order, each answered", async () => {
    await scope.redis.ping(); // connected, so there is a socket to cork
    const socket = (scope.redis as unknown as { stream: Socket }).stream;
    const { writes, restore } = countWrites(socket);
    try {
      coalesceWrites(scope.redis);
      coalesceWrites(scope.redis); // twice in a turn: still one cork
      expect(socket.writableCorked).toBe(1);
      const replies = await Promise.all(Array.from({ length: 20 }, (_, i) => scope.redis.rpush(`${scope.prefix}:list`, String(i))));
      expect(socket.writableCorked).toBe(0);
      expect(writes).toEqual([20]);
      expect(replies).toEqual(Array.from({ length: 20 }, (_, i) => i + 1));
      expect(await scope.redis.lrange(`${scope.prefix}:list`, 0, -1)).toEqual(Array.from({ length: 20 }, (_, i) => String(i)));
    } finally {
      restore();
    }
  });

  it("uncorks once the microtasks queued so far have run: they join the write, the next turn's work does not wait for it", async () => {
    await scope.redis.ping();
    const socket = (scope.redis as unknown as { stream: Socket }).stream;
    const { writes, restore } = countWrites(socket);
    try {
      const key = `${scope.prefix}:order`;
      let release: () => void = () => {};
      const other = new Promise<void>((r) => (release = r));
      // Another job's continuation, queued before the cork (a batch of preparations resolved together).
      const joined = other.then(() => scope.redis.rpush(key, "b"));
      release();
      coalesceWrites(scope.redis);
      const first = scope.redis.rpush(key, "a");
      // Once the microtasks queued before ours have run, both are on their way in one write: before any timer,
      // I/O callback or setImmediate (a claim waiting for the next turn's check phase waited out all its I/O).
      await Promise.resolve();
      expect([...writes, socket.writableCorked]).toEqual([2, 0]);
      expect([await first, await joined]).toEqual([1, 2]);
      expect(await scope.redis.lrange(key, 0, -1)).toEqual(["a", "b"]);
    } finally {
      restore();
    }
  });

  it("leaves a client that is not ready alone", () => {
    const idle = new Redis(redisUrl(), { lazyConnect: true });
    try {
      expect(() => coalesceWrites(idle)).not.toThrow();
      expect(idle.status).toBe("wait");
    } finally {
      idle.disconnect();
    }
  });
});
