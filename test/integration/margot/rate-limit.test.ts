// The rate limit: exact under concurrency (one Lua script), rolling, fair, idempotent per draft;
// and two worker processes racing never post a 6th draft inside a window.
import { Redis } from "ioredis";
import { describe, expect, it } from "vitest";
import { DraftRateLimit } from "../../../src/margot/store/rate-limit.js";
import { lastJsonLine, runCli, waitFor } from "../../helpers/cli.js";
import { ACTION_BODY, type MargotScope, useMargotScope } from "../../helpers/margot-scope.js";
import { redisUrl, useRedisPrefix } from "../../helpers/scope.js";

describe("DraftRateLimit (Lua, real Redis)", () => {
  const scope = useRedisPrefix();

  it("50 concurrent acquires from 5 connections: exactly 5 granted; the rest queued 6..50 with release times in order", async () => {
    const conns = Array.from({ length: 5 }, () => new Redis(redisUrl()));
    try {
      const now = Date.now();
      const decisions = await Promise.all(
        Array.from({ length: 50 }, (_, i) => new DraftRateLimit(conns[i % 5]!, scope.prefix, 5, 60_000).acquire(`d-${i}`, now + i)),
      );
      expect(decisions.filter((d) => d.granted)).toHaveLength(5);
      const queued = decisions.filter((d) => !d.granted) as Array<{ number: number; releaseAt: number }>;
      expect(queued.map((d) => d.number).sort((a, b) => a - b)).toEqual(Array.from({ length: 45 }, (_, i) => i + 6));
      const byNumber = [...queued].sort((a, b) => a.number - b.number);
      for (let i = 1; i < byNumber.length; i++) expect(byNumber[i]!.releaseAt).toBeGreaterThanOrEqual(byNumber[i - 1]!.releaseAt);
      // The 6th waits for the oldest draft to age out; the 11th a full window after that.
      const posted = decisions.filter((d) => d.granted);
      expect(posted).toHaveLength(5);
      expect(byNumber[0]!.releaseAt).toBeGreaterThan(now + 60_000 - 1);
      expect(byNumber[5]!.releaseAt).toBeGreaterThan(now + 120_000 - 1);
    } finally {
      for (const c of conns) c.disconnect();
    }
  });

  it("rolling window, idempotent per draft, and fair: a queued draft gets the freed slot before a newer one", async () => {
    const limit = new DraftRateLimit(scope.redis, scope.prefix, 2, 1000);
    const t0 = 1_000_000;
    expect(await limit.acquire("a", t0)).toEqual({ granted: true, number: 1 });
    expect(await limit.acquire("b", t0 + 100)).toEqual({ granted: true, number: 2 });
    expect(await limit.acquire("a", t0 + 200)).toEqual({ granted: true, number: 2 });
    expect(await limit.acquire("c", t0 + 300)).toEqual({ granted: false, number: 3, releaseAt: t0 + 1000 });
    expect(await limit.acquire("c", t0 + 400)).toEqual({ granted: false, number: 3, releaseAt: t0 + 1000 });
    expect(await limit.acquire("d", t0 + 500)).toEqual({ granted: false, number: 4, releaseAt: t0 + 1100 });
    // a ages out at t0+1000: one slot; d asks first but c is ahead of it.
    expect((await limit.acquire("d", t0 + 1001)).granted).toBe(false);
    expect(await limit.acquire("c", t0 + 1002)).toEqual({ granted: true, number: 2 });
    expect((await limit.acquire("e", t0 + 1050)).granted).toBe(false);
    expect(await limit.acquire("d", t0 + 1101)).toEqual({ granted: true, number: 2 });
    expect(await limit.waiting()).toBe(1);
  });
});

describe("two workers racing the rate limit", () => {
  let s: MargotScope;
  useMargotScope((scope) => (s = scope));

  it("8 drafts at once across two worker processes, max 5: exactly 5 posted in the window, 3 queued with a notice each", async () => {
    const env = s.env({ MARGOT_RATE_LIMIT_MAX: "5", MARGOT_RATE_WINDOW_SECONDS: "120" });
    await Promise.all([s.worker(env), s.worker(env)]);
    const results = await Promise.all(Array.from({ length: 8 }, () => s.submit(s.completion(ACTION_BODY))));
    expect(results.filter((r) => r.status === "drafted")).toHaveLength(5);
    expect(results.filter((r) => r.status === "queued_rate_limit")).toHaveLength(3);
    expect(s.telegram.drafts()).toHaveLength(5);
    const queuedNotices = s.telegram.notices().filter((n) => /queued, posts at/.test(n.text));
    expect(queuedNotices.map((n) => /^draft (\d+) of 5/.exec(n.text)?.[1]).sort()).toEqual(["6", "7", "8"]);
    const list = lastJsonLine((await runCli(["drafts", "list", "--json"], env)).stdout) as {
      drafts: Array<{ state: string }>;
      rate_limit: { in_window: number; waiting: number };
    };
    expect(list.rate_limit).toMatchObject({ in_window: 5, waiting: 3, max: 5 });
    expect(list.drafts.filter((d) => d.state === "queued")).toHaveLength(3);
    // Nothing more posts while the window holds 5.
    await waitFor(async () => (await s.queue.getDelayed()).filter((j) => j.name === "rate-limit-release").length === 3, 5000);
    expect(s.telegram.drafts()).toHaveLength(5);
  });
});
