// `sandbox list` shows how each retained run ended: its status, in the text table and in --json. Retained runs laid
// down as a worker keeps them (its deployment's mark, retained.json through writeMeta, a workspace with a file), listed by the built CLI.
import { mkdirSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { randomUUID } from "node:crypto";
import { afterEach, beforeEach, describe, expect, it } from "vitest";
import { DEFAULT_SANDBOX_IMAGE } from "../../../src/sandcastle/containers/container-args.js";
import { markDeployment } from "../../../src/sandcastle/deployment.js";
import { retainedDir, WORKSPACE_DIR, writeMeta } from "../../../src/sandcastle/retention/retained-runs.js";
import { runCli } from "../../helpers/cli.js";
import { RunScope } from "../../helpers/run-scope.js";

let s: RunScope;
beforeEach(() => {
  s = new RunScope();
});
afterEach(async () => {
  await s.close();
});

async function retain(status: string, branch: string, endedMinutesAgo: number): Promise<string> {
  const runId = `run-${randomUUID()}`;
  const dir = retainedDir(s.runsDir, runId);
  mkdirSync(join(dir, WORKSPACE_DIR), { recursive: true });
  writeFileSync(join(dir, WORKSPACE_DIR, "file.txt"), "x".repeat(2048));
  // Made by this deployment, as a worker marks each run directory it makes (ADR 0044).
  await markDeployment(dir, s.deployment);
  await writeMeta(s.runsDir, {
    run_id: runId,
    session_id: "sess-list",
    branch,
    status,
    provider: "noSandbox",
    image: DEFAULT_SANDBOX_IMAGE,
    worktree_path: "/home/agent/workspace",
    user: { uid: 1000, gid: 1000 },
    ended_at: new Date(Date.now() - endedMinutesAgo * 60_000).toISOString(),
    pinned_until: null,
  });
  return runId;
}

describe("sandbox list", () => {
  it("shows each run's status (ok, failed, timeout, killed) between its branch and its size; --json has it too", async () => {
    const runs = [
      await retain("failed", "agent/a", 40),
      await retain("ok", "agent/b", 30),
      await retain("timeout", "agent/c", 20),
      await retain("killed", "agent/d", 10),
    ];
    const text = await runCli(["sandbox", "list"], s.env());
    expect(text.code, text.stderr).toBe(0);
    expect(text.stdout.trim().split("\n")).toEqual([
      expect.stringMatching(new RegExp(`^${runs[0]}  sess-list  agent/a  failed  [0-9.]+ KiB  23h left$`)),
      expect.stringMatching(new RegExp(`^${runs[1]}  sess-list  agent/b  ok  [0-9.]+ KiB  23h left$`)),
      expect.stringMatching(new RegExp(`^${runs[2]}  sess-list  agent/c  timeout  [0-9.]+ KiB  23h left$`)),
      expect.stringMatching(new RegExp(`^${runs[3]}  sess-list  agent/d  killed  [0-9.]+ KiB  23h left$`)),
    ]);
    const json = JSON.parse((await runCli(["sandbox", "list", "--json"], s.env())).stdout) as { runs: Array<{ run_id: string; status: string }> };
    expect(json.runs.map((r) => [r.run_id, r.status])).toEqual([
      [runs[0], "failed"],
      [runs[1], "ok"],
      [runs[2], "timeout"],
      [runs[3], "killed"],
    ]);
  });
});
