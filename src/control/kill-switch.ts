// The kill switch: one state in Redis that every worker sees, plus Pi-CEO's file switch (KILL_SWITCH_FILE).
// Flips are also published so running work hears of them at once, not at its next poll.
import { existsSync } from "node:fs";
import type { RedisClient } from "../redis/connect.js";
import { z } from "zod";

export const KillSwitchState = z.object({
  active: z.boolean(),
  redis: z.boolean(),
  file: z.boolean(),
  file_path: z.string().nullable(),
  changed_at: z.string().nullable(),
  changed_by: z.string().nullable(),
});
export type KillSwitchState = z.infer<typeof KillSwitchState>;

const Stored = z.object({ on: z.boolean(), at: z.string(), by: z.string() });

/** Whether the switch's Redis value says on: `state().redis` for a readable value; an unreadable one is off here, as a missing one. */
export function storedIsOn(raw: string | null): boolean {
  if (raw === null) return false;
  try {
    const stored = Stored.safeParse(JSON.parse(raw));
    return stored.success && stored.data.on;
  } catch {
    return false;
  }
}

/** storedIsOn in Lua, for scripts that must not act while the switch is on (draft-claim.ts). */
export const KILL_SWITCH_ON_LUA = `
local function kill_switch_on(raw)
  if not raw then return false end
  local ok, v = pcall(cjson.decode, raw)
  return ok and type(v) == 'table' and v.on == true and type(v.at) == 'string' and type(v.by) == 'string'
end
`;

export class KillSwitch {
  readonly key: string;
  readonly channel: string;

  constructor(
    private readonly redis: RedisClient,
    prefix: string,
    private readonly file: string | undefined,
  ) {
    this.key = `${prefix}:control:kill-switch`;
    this.channel = `${prefix}:control:kill-switch:changed`;
  }

  fileActive(): boolean {
    return this.file !== undefined && existsSync(this.file);
  }

  async state(): Promise<KillSwitchState> {
    const raw = await this.redis.get(this.key);
    const stored = raw === null ? null : Stored.safeParse(JSON.parse(raw));
    const redisOn = storedIsOn(raw);
    const file = this.fileActive();
    return {
      active: redisOn || file,
      redis: redisOn,
      file,
      file_path: this.file ?? null,
      changed_at: stored?.success ? stored.data.at : null,
      changed_by: stored?.success ? stored.data.by : null,
    };
  }

  async isActive(): Promise<boolean> {
    return this.fileActive() || (await this.state()).redis;
  }

  async set(on: boolean, by: string): Promise<void> {
    const value = JSON.stringify({ on, at: new Date().toISOString(), by });
    await this.redis.multi().set(this.key, value).publish(this.channel, value).exec();
  }
}
