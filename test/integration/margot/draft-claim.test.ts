// The draft claim (one script: claim, create, count, kill switch, posting) on real Redis: what a first
// claim stores and begins, what a retry and another job get, and that its Lua reading of the kill switch
// agrees with storedIsOn.
import { mkdtempSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterEach, beforeEach, describe, expect, it } from "vitest";
import { KillSwitch, storedIsOn } from "../../../src/control/kill-switch.js";
import { DraftClaim } from "../../../src/margot/bridge/draft-claim.js";
import { DraftStore, type NewDraft } from "../../../src/margot/store/drafts.js";
import { IntentStore, type IntentRecord } from "../../../src/margot/store/intents.js";
import { DraftRateLimit } from "../../../src/margot/store/rate-limit.js";
import { useRedisPrefix } from "../../helpers/scope.js";

describe("DraftClaim (Lua, real Redis)", () => {
  const scope = useRedisPrefix();
  let dir: string;
  beforeEach(() => {
    dir = mkdtempSync(join(tmpdir(), "scq-draft-claim-"));
  });
  afterEach(() => rmSync(dir, { recursive: true, force: true }));

  const rig = (max = 5, switchFile?: string) => {
    const deps = {
      intents: new IntentStore(scope.redis, scope.prefix),
      drafts: new DraftStore(scope.redis, scope.prefix),
      rateLimit: new DraftRateLimit(scope.redis, scope.prefix, max, 60_000),
      killSwitch: new KillSwitch(scope.redis, scope.prefix, switchFile),
    };
    return { ...deps, claim: new DraftClaim(deps) };
  };
  let n = 0;
  const decision = (job: string): { record: IntentRecord; draft: NewDraft } => {
    const id = `d-claim${++n}`;
    const interaction_id = `i-${n}`;
    const draft: NewDraft = {
      id,
      interaction_id,
      title: "Replace the retry loop",
      body: "a rendered ticket body",
      ticket: {} as never,
      target_repo: "acme/api",
      project: "api",
      classification: "action_shaped",
      confidence: 0.9,
      channel: "local",
      created_at: new Date().toISOString(),
      marker_nonce: `nonce-${n}`,
    };
    const result = {
      interaction_id,
      classification: "action_shaped",
      confidence: 0.9,
      action_summary: draft.title,
      target_repo: "acme/api",
      draft_id: id,
      skipped_reason: null,
      status: "drafted",
      reason: null,
    } as const;
    return { record: { job, result, draft, follow_up: null, decided_at: new Date().toISOString() }, draft };
  };
  const opts = { suppressedUntil: null, ttlS: 60 };

  it("a first claim stores the intent without a copy of the draft, creates and counts the draft, and begins posting for its job", async () => {
    const r = rig();
    const { record, draft } = decision("job-1@1");
    const { claim, fresh } = await r.claim.claim(record, draft, opts, "job-1@1", Date.now());
    expect(claim.outcome).toBe("claimed");
    expect(fresh?.decision).toEqual({ granted: true, number: 1 });
    expect(fresh?.begun).toBe(true);
    expect(fresh?.hold).toEqual({ active: false, noticed: false });
    expect(fresh?.stored.draft.state).toBe("posting");
    const intent = await scope.redis.hgetall(r.intents.key(record.result.interaction_id));
    expect(intent.job).toBe("job-1@1");
    expect(intent.draft).toBeUndefined();
    expect(JSON.parse(intent.result!).draft_id).toBe(draft.id);
    const stored = await scope.redis.hgetall(r.drafts.key(draft.id));
    expect({ state: stored.state, last_token: stored.last_token, title: stored.title }).toEqual({
      state: "posting",
      last_token: "job-1@1",
      title: draft.title,
    });
    expect(await scope.redis.zscore(r.drafts.indexKey, draft.id)).not.toBeNull();
    expect(await r.rateLimit.inWindow()).toBe(1);
    // As read back through the store, the draft is what the claim answered.
    expect((await r.drafts.get(draft.id))).toEqual(fresh?.stored.draft);
  });

  it("the same job again resumes (no second draft, no second count); another job is told it is taken", async () => {
    const r = rig();
    const { record, draft } = decision("job-2@1");
    await r.claim.claim(record, draft, opts, "job-2@1", Date.now());
    const again = decision("job-2@1");
    const retry = await r.claim.claim(
      { ...again.record, result: record.result },
      { ...again.draft, interaction_id: draft.interaction_id },
      opts,
      "job-2@1",
      Date.now(),
    );
    expect(retry.claim.outcome).toBe("resumed");
    expect(retry.fresh).toBeNull();
    const other = await r.claim.claim({ ...decision("job-3@1").record, result: record.result }, draft, opts, "job-3@1", Date.now());
    expect(other.claim.outcome).toBe("taken");
    expect(other.fresh).toBeNull();
    expect(await scope.redis.exists(r.drafts.key(again.draft.id))).toBe(0);
    expect(await r.rateLimit.inWindow()).toBe(1);
  });

  it("over the rate limit: the draft is created pending, queued by number, and not begun", async () => {
    const r = rig(1);
    const first = decision("job-4@1");
    await r.claim.claim(first.record, first.draft, opts, "job-4@1", Date.now());
    const second = decision("job-5@1");
    const { fresh } = await r.claim.claim(second.record, second.draft, opts, "job-5@1", Date.now());
    expect(fresh?.decision).toMatchObject({ granted: false, number: 2 });
    expect(fresh?.begun).toBe(false);
    expect(await scope.redis.hget(r.drafts.key(second.draft.id), "state")).toBe("pending");
  });

  it("reads the kill switch as storedIsOn does, for every shape of its value, and begins nothing while it is on", async () => {
    const values: Array<string | null> = [
      null,
      JSON.stringify({ on: true, at: "2026-12-01T00:00:00Z", by: "ops" }),
      JSON.stringify({ on: false, at: "2026-12-01T00:00:00Z", by: "ops" }),
      JSON.stringify({ on: true }),
      JSON.stringify({ on: "yes", at: "x", by: "y" }),
      "[1,2]",
      "not json",
    ];
    for (const value of values) {
      const r = rig(1000);
      if (value === null) await scope.redis.del(r.killSwitch.key);
      else await scope.redis.set(r.killSwitch.key, value);
      const { record, draft } = decision(`job-ks-${n}@1`);
      const { fresh } = await r.claim.claim(record, draft, opts, record.job, Date.now());
      const on = storedIsOn(value);
      expect({ value, active: fresh?.hold.active, begun: fresh?.begun }).toEqual({ value, active: on, begun: !on });
    }
    // Both readings say on for the switch as KillSwitch writes it.
    const r = rig();
    await r.killSwitch.set(true, "test");
    expect(storedIsOn(await scope.redis.get(r.killSwitch.key))).toBe(true);
  });

  it("the file switch holds too: nothing begun, the hold says active", async () => {
    const file = join(dir, "STOP");
    writeFileSync(file, "");
    const r = rig(5, file);
    const { record, draft } = decision("job-6@1");
    const { fresh } = await r.claim.claim(record, draft, opts, "job-6@1", Date.now());
    expect(fresh?.hold.active).toBe(true);
    expect(fresh?.begun).toBe(false);
    expect(await scope.redis.hget(r.drafts.key(draft.id), "state")).toBe("pending");
  });
});
