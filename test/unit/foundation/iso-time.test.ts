// isoTime against Date#toISOString: the same text for every time, whichever second it formatted before.
import { describe, expect, it } from "vitest";
import { isoTime } from "../../../src/iso-time.js";

describe("isoTime", () => {
  it("writes what toISOString writes, for times in one second and across seconds, minutes, days and years", () => {
    const starts = [0, 999, 1_000, 59_999, 86_399_999, Date.UTC(2026, 11, 31, 23, 59, 59, 990), Date.UTC(2024, 1, 29, 12, 0, 0, 0), 253_402_300_799_000];
    for (const start of starts) {
      for (let ms = start; ms < start + 1_100; ms += 7) {
        if (ms > 253_402_300_799_999) break;
        expect(isoTime(ms)).toBe(new Date(ms).toISOString());
      }
    }
  });

  it("writes the milliseconds of the second it was asked for, whichever second it formatted last", () => {
    const a = Date.UTC(2026, 8, 17, 3, 4, 5, 6);
    const b = Date.UTC(2026, 8, 17, 3, 4, 6, 60);
    expect([isoTime(a), isoTime(b), isoTime(a + 1), isoTime(b + 900)]).toEqual([a, b, a + 1, b + 900].map((ms) => new Date(ms).toISOString()));
  });

  it("leaves fractions of a millisecond, times before 1970 and after 9999 to Date", () => {
    for (const ms of [1.5, 1_700_000_000_000.25, -1, -86_400_001, 253_402_300_800_000]) expect(isoTime(ms)).toBe(new Date(ms).toISOString());
    expect(() => isoTime(Number.NaN)).toThrow(RangeError);
  });

  it("is the time now when given none", () => {
    const before = Date.now();
    const at = Date.parse(isoTime());
    expect(at).toBeGreaterThanOrEqual(before);
    expect(at).toBeLessThanOrEqual(Date.now());
  });
});
