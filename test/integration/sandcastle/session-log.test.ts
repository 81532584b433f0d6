// The session log on a real Redis: capped in bytes, newest lines kept, batches as written.
import { Redis } from "ioredis";
import { afterAll, afterEach, describe, expect, it } from "vitest";
import { StreamAppender } from "../../../src/redis/stream-appender.js";
import { compareStreamIds, readSessionLog, sessionLogKey, sessionLogSink } from "../../../src/session-log/session-log.js";
import { deletePrefix, redisUrl, uniquePrefix } from "../../helpers/scope.js";

const prefix = uniquePrefix();
const appender = new StreamAppender({ kind: "url", url: redisUrl() });
const redis = new Redis(redisUrl());

afterEach(async () => {
  await deletePrefix(redisUrl(), prefix);
});

const line = (i: number) => `line-${String(i).padStart(4, "0")} ${"x".repeat(989)}`; // 1000 bytes

describe("session log", () => {
  it("keeps about the newest maxBytes of lines and trims what is older, earlier runs' lines included", async () => {
    const key = sessionLogKey(prefix, "capped");
    const earlierRun = sessionLogSink(appender, key, 1 << 20);
    await earlierRun(["from an earlier run"]);
    const sink = sessionLogSink(appender, key, 10_000);
    // Several batches in flight at once, as the batcher sends them.
    await Promise.all(Array.from({ length: 25 }, (_, b) => sink([line(2 * b), Buffer.from(line(2 * b + 1))])));
    const stored = await readSessionLog(redis, key);
    const bytes = stored.reduce((n, l) => n + l.length + 1, 0);
    expect(bytes).toBeLessThanOrEqual(10_000);
    expect(bytes).toBeGreaterThan(10_000 - 2 * 1001);
    // The newest lines, in order, with nothing missing in between.
    expect(stored.at(-1)).toBe(line(49));
    const first = Number(stored[0]!.slice(5, 9));
    expect(stored).toEqual(Array.from({ length: 50 - first }, (_, i) => line(first + i)));
    expect(await redis.ttl(key)).toBeGreaterThan(0);
  });

  it("orders stream ids by time, then by sequence (not as text)", () => {
    const ids = ["1700000000000-10", "1700000000000-9", "999999999999-0", "1700000000001-0"];
    expect([...ids].sort(compareStreamIds)).toEqual(["999999999999-0", "1700000000000-9", "1700000000000-10", "1700000000001-0"]);
  });

  afterAll(() => {
    appender.close();
    redis.disconnect();
  });
});
