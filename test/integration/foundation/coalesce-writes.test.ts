// coalesceWrites on a real Redis: the commands of one turn leave in one write to the socket, in order, and
// every one of them is answered; the socket is uncorked in the same turn's check phase.
import { Redis } from "ioredis";
import { afterAll, afterEach, beforeAll, beforeEach, describe, expect, it } from "vitest";
import { coalesceWrites } from "../../../src/redis/coalesce-writes.js";
import { deletePrefix, redisUrl, uniquePrefix } from "../../helpers/scope.js";

describe("coalesceWrites (real Redis)", () => {
  let redis: Redis;
  let prefix: string;
  beforeAll(async () => {
    redis = new Redis(redisUrl());
    await redis.ping();
  });
  afterAll(() => redis.disconnect());
  beforeEach(() => {
    prefix = uniquePrefix();
  });
  afterEach(() => deletePrefix(redisUrl(), prefix));

  it("sends a turn's commands in one socket write, in order, each answered", async () => {
    const socket = (redis as unknown as { stream: import("node:net").Socket }).stream;
    const writes: number[] = [];
    const write = socket._writev?.bind(socket);
    const single = socket._write.bind(socket);
    // Count what reaches the socket's own write functions (after Node's cork buffering).
    socket._writev = (chunks, cb) => (writes.push(chunks.length), write!(chunks, cb));
    socket._write = (chunk, enc, cb) => (writes.push(1), single(chunk, enc, cb));
    try {
      coalesceWrites(redis);
      coalesceWrites(redis); // twice in a turn: still one cork
      expect(socket.writableCorked).toBe(1);
      const replies = await Promise.all(Array.from({ length: 20 }, (_, i) => redis.rpush(`${prefix}:list`, String(i))));
      expect(socket.writableCorked).toBe(0);
      expect(writes).toEqual([20]);
      expect(replies).toEqual(Array.from({ length: 20 }, (_, i) => i + 1));
      expect(await redis.lrange(`${prefix}:list`, 0, -1)).toEqual(Array.from({ length: 20 }, (_, i) => String(i)));
    } finally {
      socket._writev = write as typeof socket._writev;
      socket._write = single;
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
