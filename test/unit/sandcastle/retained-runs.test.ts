// Run ids before they touch a path; expiry under a window and a pin; what `sandbox list` says.
import { describe, expect, it } from "vitest";
import { expiresAt, parseRunId, pinned, retainedDir, type RetainedMeta, timeLeft } from "../../../src/sandcastle/retention/retained-runs.js";

const RUN = "run-0b7e6a52-3c1d-4f7e-9a43-1d2c3b4a5f60";
const H = 3_600_000;
const D = 24 * H;
const ended = Date.parse("2026-12-01T08:00:00.000Z");
const meta: RetainedMeta = {
  run_id: RUN,
  session_id: "s1",
  branch: "agent/x",
  status: "ok",
  provider: "podman",
  image: "localhost/sandcastle-queue-agent:latest",
  worktree_path: "/home/agent/workspace",
  user: { uid: 1000, gid: 1000 },
  ended_at: new Date(ended).toISOString(),
  pinned_until: null,
};

describe("run ids", () => {
  it("take run-<uuid> only, before any path is made of them", () => {
    expect(parseRunId(RUN)).toBe(RUN);
    expect(retainedDir("/runs", RUN)).toBe(`/runs/${RUN}`);
    for (const bad of ["../etc", "run-../../x", `${RUN}/..`, "run-1", "", "RUN-0B7E6A52-3C1D-4F7E-9A43-1D2C3B4A5F60", `${RUN}\n`]) {
      expect(() => retainedDir("/runs", bad)).toThrow(/^invalid run id: .* is not one: a run id is run-<uuid>$/);
    }
  });
});

describe("expiry", () => {
  it("is the end + the window in force; a pin is a timestamp that outlives a shorter window and still ends", () => {
    expect(expiresAt(meta, 24 * H)).toBe(ended + 24 * H);
    expect(expiresAt(meta, 1 * H)).toBe(ended + 1 * H);
    const p = pinned(meta, 7, ended + 2 * H);
    expect(p.pinned_until).toBe(new Date(ended + 2 * H + 7 * D).toISOString());
    expect(expiresAt(p, 1 * H)).toBe(ended + 2 * H + 7 * D);
    expect(expiresAt(p, 24 * H)).toBe(ended + 2 * H + 7 * D);
    // A longer window than the pin wins; a second pin never shortens the first.
    expect(expiresAt(p, 30 * D)).toBe(ended + 30 * D);
    expect(pinned(p, 1, ended + 3 * H).pinned_until).toBe(p.pinned_until);
  });

  it("reads as `19h left`, `pinned, 6d left`, `expired`", () => {
    expect(timeLeft(meta, 24 * H, ended + 5 * H)).toBe("19h left");
    expect(timeLeft(meta, 24 * H, ended + 23.5 * H)).toBe("30m left");
    expect(timeLeft(meta, 24 * H, ended + 24 * H)).toBe("expired");
    expect(timeLeft(pinned(meta, 7, ended), 24 * H, ended + 1000)).toBe("pinned, 6d left");
  });
});
