// The effect log on real Redis: an effect is marked as soon as it is done (marks done in one turn share a
// write, those of several records one command), a failed effect leaves the others marked before its error
// goes on, and a retry repeats only what failed.
import { describe, expect, it } from "vitest";
import { EffectLog } from "../../../src/margot/store/effects.js";
import { useRedisPrefix } from "../../helpers/scope.js";

describe("EffectLog (real Redis)", () => {
  const scope = useRedisPrefix();

  /** The HSETs that reach Redis on the scope's key, seen by MONITOR. */
  async function watchWrites(key: string): Promise<{ hsets: () => string[][]; stop: () => void }> {
    const monitor = await scope.redis.monitor();
    const seen: string[][] = [];
    monitor.on("monitor", (_time: string, args: string[]) => {
      if (args[0]?.toLowerCase() === "hset" && args[1] === key) seen.push(args.slice(2));
    });
    return { hsets: () => seen, stop: () => monitor.disconnect() };
  }

  it("an effect is marked once it is done, without waiting for a slower one of its step; marks done in one turn share one write", async () => {
    const key = `${scope.prefix}:fx:prompt`;
    const log = EffectLog.fresh(scope.redis, key);
    const watch = await watchWrites(key);
    let release: () => void = () => {};
    const slow = new Promise<void>((r) => (release = r));
    try {
      const step = log.run([
        ["audit", async () => {}],
        ["notice", async () => {}],
        // A ledger stuck on its disk: a crash now must not repeat the audit row or the notice (crash.test.ts).
        ["ledger", () => slow],
      ]);
      await expect.poll(async () => (await scope.redis.hkeys(key)).sort()).toEqual(["fx:audit", "fx:notice"]);
      await expect.poll(() => watch.hsets().length).toBe(1);
      release();
      await step;
      await expect.poll(async () => (await scope.redis.hkeys(key)).sort()).toEqual(["fx:audit", "fx:ledger", "fx:notice"]);
    } finally {
      release();
      watch.stop();
    }
  });

  it("a failed effect: the others are marked before the error goes on; the next run repeats only the failed one", async () => {
    const key = `${scope.prefix}:fx:partial`;
    const log = EffectLog.fresh(scope.redis, key);
    const runs = { audit: 0, ledger: 0 };
    let diskFull = true;
    const step = () =>
      log.run([
        ["audit", async () => void runs.audit++],
        [
          "ledger",
          async () => {
            runs.ledger++;
            if (diskFull) throw new Error("ENOSPC: no space left on device");
          },
        ],
      ]);
    await expect(step()).rejects.toThrow(/ENOSPC/);
    // Written by the time the error arrived (a retry in another process reads it from Redis).
    expect(await scope.redis.hkeys(key)).toEqual(["fx:audit"]);

    // A retry reads the record afresh, as a new job attempt would.
    diskFull = false;
    const retried = EffectLog.fromHash(scope.redis, key, await scope.redis.hgetall(key));
    await retried.run([
      ["audit", async () => void runs.audit++],
      ["ledger", async () => void runs.ledger++],
    ]);
    expect(runs).toEqual({ audit: 1, ledger: 2 });
    await expect.poll(async () => (await scope.redis.hkeys(key)).sort()).toEqual(["fx:audit", "fx:ledger"]);
  });

  it("the marks of several records done in one turn (concurrent jobs' rows) leave in one command", async () => {
    const keys = ["a", "b", "c"].map((k) => `${scope.prefix}:fx:many-${k}`);
    const logs = keys.map((key) => EffectLog.fresh(scope.redis, key));
    // Redis knows the marks' script by now (a first call sends it again after NOSCRIPT).
    const warm = `${scope.prefix}:fx:warm`;
    await EffectLog.fresh(scope.redis, warm).run([["audit", async () => {}]]);
    await expect.poll(() => scope.redis.hkeys(warm)).toEqual(["fx:audit"]);
    const monitor = await scope.redis.monitor();
    // Writes the client sent (not those a script ran) that touch these keys, with the keys they touch.
    const sent: string[] = [];
    monitor.on("monitor", (_time: string, args: string[], source: string) => {
      const name = args[0]!.toLowerCase();
      if (source !== "lua" && ["evalsha", "eval", "hset", "hmset"].includes(name)) sent.push(`${name} ${keys.filter((k) => args.includes(k)).length}`);
    });
    try {
      await Promise.all(logs.map((log, i) => log.run([["audit", async () => {}], ...(i === 0 ? [["notice", async () => {}] as const] : [])])));
      await expect
        .poll(async () => Promise.all(keys.map(async (key) => (await scope.redis.hkeys(key)).sort())))
        .toEqual([["fx:audit", "fx:notice"], ["fx:audit"], ["fx:audit"]]);
      await expect.poll(() => sent).toEqual(["evalsha 3"]);
      // One time for the marks of one write.
      const times = await Promise.all(keys.map((key) => scope.redis.hget(key, "fx:audit")));
      expect(new Set(times).size).toBe(1);
      expect(Number.isNaN(Date.parse(times[0]!))).toBe(false);
    } finally {
      monitor.disconnect();
    }
  });
});
