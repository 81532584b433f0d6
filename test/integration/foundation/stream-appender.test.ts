// The session log's own Redis connection, against real redis-servers.
import { Redis } from "ioredis";
import { afterEach, describe, expect, it } from "vitest";
import { AppError } from "../../../src/errors.js";
import { parseReply, StreamAppender } from "../../../src/redis/stream-appender.js";
import { startRedisServer, type TestRedis } from "../../helpers/redis-server.js";

let server: TestRedis | null = null;
let appender: StreamAppender | null = null;
let client: Redis | null = null;

afterEach(async () => {
  appender?.close();
  client?.disconnect();
  await server?.stop();
  server = appender = client = null;
});

async function start(): Promise<{ server: TestRedis; client: Redis }> {
  server = await startRedisServer();
  client = new Redis(server.url);
  return { server, client };
}

describe("StreamAppender", () => {
  it("adds one entry whose value is its pieces back to back, in the order the commands were given", async () => {
    const { server, client } = await start();
    appender = new StreamAppender({ kind: "url", url: server.url });
    const ids = await Promise.all([
      appender.xadd("{t}:log", 100, "lines", [Buffer.from("one\ntw"), Buffer.from("o"), Buffer.alloc(0), Buffer.from("\nthrée")]),
      appender.xadd("{t}:log", 100, "lines", Buffer.from("four")),
      appender.xadd("{t}:log", 100, "lines", "five"),
    ]);
    const entries = await client.xrange("{t}:log", "-", "+");
    expect(entries.map(([id]) => id)).toEqual(ids);
    expect(entries.map(([, fields]) => fields)).toEqual([["lines", "one\ntwo\nthrée"], ["lines", "four"], ["lines", "five"]]);
    expect(await appender.expire("{t}:log", 60)).toBe(1);
    expect(await client.ttl("{t}:log")).toBeGreaterThan(0);
  });

  it("authenticates and selects the database the URL names, and never puts the password in an error", async () => {
    const { server, client } = await start();
    await client.config("SET", "requirepass", "s3cret-pass-word");
    const withAuth = server.url.replace("redis://", "redis://:s3cret-pass-word@") + "/3";
    appender = new StreamAppender({ kind: "url", url: withAuth });
    await appender.xadd("{t}:db3", 10, "lines", "x");
    const db3 = new Redis(withAuth);
    expect(await db3.xlen("{t}:db3")).toBe(1);
    db3.disconnect();

    const wrong = new StreamAppender({ kind: "url", url: server.url.replace("redis://", "redis://:not-the-password@") });
    const err = await wrong.xadd("{t}:db3", 10, "lines", "x").catch((e: unknown) => e);
    // The refused connection is closed, not left open beside the next attempt's.
    await expect(wrong.xadd("{t}:db3", 10, "lines", "x")).rejects.toThrow(/WRONGPASS|invalid password/i);
    const authOnly = async () => String(await client.client("LIST")).split("\n").filter((l) => / cmd=auth /.test(l)).length;
    const deadline = Date.now() + 2000;
    while ((await authOnly()) > 0 && Date.now() < deadline) await new Promise((r) => setTimeout(r, 20));
    expect(await authOnly()).toBe(0);
    wrong.close();
    expect(err).toBeInstanceOf(AppError);
    expect((err as AppError).kind).toBe("redis_unavailable");
    expect((err as Error).message).toMatch(/WRONGPASS|invalid password/i);
    expect((err as Error).message).not.toContain("not-the-password");
  });

  it("fails one refused write alone and keeps the connection", async () => {
    const { server, client } = await start();
    await client.set("{t}:string", "not a stream");
    appender = new StreamAppender({ kind: "url", url: server.url });
    await expect(appender.xadd("{t}:string", 10, "lines", "x")).rejects.toThrow(/WRONGTYPE/);
    await expect(appender.xadd("{t}:ok", 10, "lines", "y")).resolves.toMatch(/^\d+-\d+$/);
  });

  it("fails writes while Redis is gone, fast, and writes again once it is back", async () => {
    const first = await startRedisServer();
    server = first;
    appender = new StreamAppender({ kind: "url", url: first.url }, 1000);
    await appender.xadd("{t}:log", 10, "lines", "before");
    await first.stop();
    server = null;
    const started = Date.now();
    await expect(appender.xadd("{t}:log", 10, "lines", "during")).rejects.toMatchObject({ kind: "redis_unavailable" });
    expect(Date.now() - started).toBeLessThan(5000);
    // Redis comes back on the same port: the same appender connects again on its next write.
    const second = await startRedisServer([], Number(new URL(first.url).port));
    server = second;
    await appender.xadd("{t}:log", 10, "lines", "after");
    client = new Redis(second.url);
    expect((await client.xrange("{t}:log", "-", "+")).map(([, f]) => f[1])).toEqual(["after"]);
  });

  it("refuses commands after close()", async () => {
    const { server } = await start();
    appender = new StreamAppender({ kind: "url", url: server.url });
    appender.close();
    await expect(appender.xadd("{t}:log", 10, "lines", "x")).rejects.toMatchObject({ kind: "redis_unavailable" });
  });
});

describe("parseReply", () => {
  it("waits for a whole reply and reads each simple type", () => {
    expect(parseReply(Buffer.from("$5\r\nhel"))).toBeNull();
    expect(parseReply(Buffer.from("+OK"))).toBeNull();
    expect(parseReply(Buffer.from("$5\r\nhello\r\n+OK\r\n"))).toEqual({ value: "hello", error: null, length: 11 });
    expect(parseReply(Buffer.from(":42\r\n"))).toEqual({ value: 42, error: null, length: 5 });
    expect(parseReply(Buffer.from("$-1\r\n"))).toEqual({ value: null, error: null, length: 5 });
    expect(parseReply(Buffer.from("-ERR no\r\n"))).toEqual({ value: null, error: "ERR no", length: 9 });
    expect(parseReply(Buffer.from("*1\r\n"))?.fatal).toBe(true);
  });
});
