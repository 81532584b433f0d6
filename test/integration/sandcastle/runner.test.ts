// The run pipeline with misbehaving children: real processes, real Redis, real files.
import { existsSync, mkdirSync, readdirSync, readFileSync, statSync, symlinkSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { afterEach, beforeEach, describe, expect, it } from "vitest";
import { parseJsonl } from "../../../src/audit/jsonl-appender.js";
import { NAME_RULE } from "../../../src/redact/index.js";
import { childCommand } from "../../../src/sandcastle/worker/child-command.js";
import type { SandcastleRunRequestInput } from "../../../src/sandcastle/contract.js";
import { groupAlive } from "../../../src/sandcastle/worker/process-tree.js";
import { processAlive } from "../../../src/redis/process-alive.js";
import { RunHarness } from "../../helpers/run-harness.js";
import { waitFor } from "../../helpers/cli.js";

let h: RunHarness;
beforeEach(() => {
  h = new RunHarness();
});
afterEach(async () => {
  await h.close();
});

const SECRET = () => h.secretSource.ANTHROPIC_API_KEY!;
const auditRows = () => parseJsonl(existsSync(h.auditPath) ? readFileSync(h.auditPath, "utf8") : "") as Array<Record<string, unknown>>;
const configFiles = () => readdirSync(h.configDir);
const started = (runId: string) => join(h.outDir, `started-${runId}`);

describe("secrets", () => {
  it("strips an ANTHROPIC_API_KEY=… line and every form of the run's secret from the session log, the result and the audit", async () => {
    const req = h.request({ extra_env: { FAKE_MODE: "secret" } });
    const result = await h.run(req);
    expect(result.status).toBe("ok");
    const stored = await h.sessionLog(req.session_id);
    expect(stored.length).toBeGreaterThanOrEqual(5);
    const everything = [stored.join("\n"), JSON.stringify(result), readFileSync(h.auditPath, "utf8")].join("\n");
    // The session-log check: zero env-var names followed by = or :
    expect(everything.match(new RegExp(NAME_RULE.source, "g")) ?? []).toEqual([]);
    expect(everything).not.toMatch(/[A-Z_]+_(KEY|TOKEN|SECRET|PASSWORD)\s*[=:]/);
    expect(everything).not.toContain(SECRET());
    expect(everything).not.toContain("sk-ant-");
    expect(everything).not.toContain(Buffer.from(`x:${SECRET()}`).toString("base64").slice(4, 40));
    expect(stored.some((l) => l.includes("***=[REDACTED]"))).toBe(true);
  });

  it("the child's environment is exactly PATH, HOME and NODE_NO_WARNINGS", async () => {
    const result = await h.run(h.request({ extra_env: { FAKE_MODE: "env-dump" } }));
    expect(result.status).toBe("ok");
    const env = JSON.parse(readFileSync(join(h.outDir, "child-env.json"), "utf8")) as Record<string, string>;
    expect(Object.keys(env).sort()).toEqual(["HOME", "NODE_NO_WARNINGS", "PATH"]);
    expect(env.NODE_NO_WARNINGS).toBe("1");
    expect(JSON.stringify(env)).not.toContain(SECRET());
  });

  it("a variable the worker lacks fails the run as env_unresolved, naming it, launching nothing", async () => {
    delete h.secretSource.ANTHROPIC_API_KEY;
    const result = await h.run(h.request({ extra_env: { FAKE_MODE: "ok" } }));
    expect(result).toMatchObject({ status: "failed", failure_reason: "env_unresolved" });
    expect(result.message).toContain("ANTHROPIC_API_KEY");
    expect(readdirSync(h.outDir)).toEqual([]);
    expect(auditRows().map((r) => [r.type, r.failure_reason, r.missing_vars])).toEqual([["sandcastle_run_failed", "env_unresolved", ["ANTHROPIC_API_KEY"]]]);
  });
});

describe("config file", () => {
  it("is 0600 while the child runs and gone after ok, failed, timeout and killed", async () => {
    const ok = await h.run(h.request({ extra_env: { FAKE_MODE: "ok" } }), { runId: "run-cf-ok" });
    expect(ok.status).toBe("ok");
    expect(JSON.parse(readFileSync(started("run-cf-ok"), "utf8")).mode).toBe(0o600);
    expect(configFiles()).toEqual([]);

    expect((await h.run(h.request({ extra_env: { FAKE_MODE: "fail" } }))).status).toBe("failed");
    expect(configFiles()).toEqual([]);

    expect((await h.run(h.request({ timeout_minutes: 0.02, extra_env: { FAKE_MODE: "sleep" } }))).status).toBe("timeout");
    expect(configFiles()).toEqual([]);

    const stop = new AbortController();
    const killed = h.run(h.request({ extra_env: { FAKE_MODE: "sleep" } }), { signal: stop.signal, runId: "run-cf-kill" });
    await waitFor(() => existsSync(started("run-cf-kill")), 10_000);
    expect(configFiles()).toEqual(["scq-run-run-cf-kill"]);
    expect(statSync(join(h.configDir, "scq-run-run-cf-kill")).mode & 0o777).toBe(0o700);
    stop.abort({ reason: "cancelled", by: "test" });
    expect((await killed).status).toBe("killed");
    expect(configFiles()).toEqual([]);
  });
});

describe("child output", () => {
  it("cuts a 50 MB line with no newline to 64 KiB with a marker, and still reads the result", async () => {
    const req = h.request({ extra_env: { FAKE_MODE: "huge-line" } });
    const result = await h.run(req);
    expect(result.status).toBe("ok");
    const lines = await h.sessionLog(req.session_id);
    const huge = lines.find((l) => l.includes("line truncated"))!;
    expect(huge).toMatch(/…\[line truncated: \d+ more bytes\]$/);
    expect(huge.length).toBeLessThan(64 * 1024 + 100);
    expect(Number(/truncated: (\d+)/.exec(huge)![1])).toBe(50 * 1024 * 1024 - 64 * 1024);
  });

  it("non-JSON output without run_complete ends failed / no_result with the exit code", async () => {
    const result = await h.run(h.request({ extra_env: { FAKE_MODE: "non-json" } }));
    expect(result).toMatchObject({ status: "failed", failure_reason: "no_result", exit_code: 0 });
    expect(result.log_tail).toEqual(["{not json at all", "just words", `\u001e── run failed (no_result): ${result.message}`]);
  });

  it("an invalid run_complete ends failed / bad_result naming the field", async () => {
    const result = await h.run(h.request({ extra_env: { FAKE_MODE: "bad-result" } }));
    expect(result).toMatchObject({ status: "failed", failure_reason: "bad_result" });
    expect(result.message).toMatch(/result\.branch/);
  });

  it("a child's own failure reason is kept", async () => {
    const result = await h.run(h.request({ extra_env: { FAKE_MODE: "fail" } }));
    expect(result).toMatchObject({ status: "failed", failure_reason: "agent_unavailable", exit_code: 1, message: "claude is not on PATH" });
  });

  it("a repo_workdir that does not exist is named as such, and nothing is launched", async () => {
    const missing = join(h.dir.path, "no-such-repo");
    const result = await h.run(h.request({ repo_workdir: missing, extra_env: { FAKE_MODE: "ok" } }));
    expect(result).toMatchObject({
      status: "failed",
      failure_reason: "invalid_payload",
      message: `repo_workdir ${missing} does not exist on this worker: the run starts in it`,
    });
    expect(readdirSync(h.outDir)).toEqual([]);
    expect(configFiles()).toEqual([]);
  });

  it("a repo_workdir or prompt_template_dir in RUNS_DIR (also through a symlink) fails invalid_payload before anything is made or started", async () => {
    const retained = join(h.runsDir, "run-00000000-0000-4000-8000-000000000001");
    mkdirSync(join(retained, "workspace"), { recursive: true });
    symlinkSync(retained, join(h.dir.path, "link-to-run"));
    const why = "retained run workspaces are never mounted into another run";
    const cases: Array<[Partial<SandcastleRunRequestInput>, string]> = [
      [{ repo_workdir: join(retained, "workspace") }, `repo_workdir ${retained}/workspace lies inside RUNS_DIR ${h.runsDir}: ${why}`],
      [
        { prompt_template_dir: join(h.dir.path, "link-to-run", "job") },
        `prompt_template_dir ${h.dir.path}/link-to-run/job lies inside RUNS_DIR ${h.runsDir} (it resolves to ${retained}/job, RUNS_DIR to ${h.runsDir}): ${why}`,
      ],
    ];
    for (const [patch, message] of cases) {
      let spawned = false;
      const result = await h.run(h.request({ ...patch, extra_env: { FAKE_MODE: "ok" } }), { onSpawn: () => (spawned = true) });
      expect(result).toMatchObject({ status: "failed", failure_reason: "invalid_payload", exit_code: null, message });
      expect(spawned).toBe(false);
      const rows = auditRows().filter((r) => r.run_id === result.run_id);
      expect(rows).toEqual([expect.objectContaining({ type: "sandcastle_run_failed", failure_reason: "invalid_payload" })]);
    }
    // No child ran (it leaves a started-<run_id> file), no run directory (no config, no secret) was made.
    expect(readdirSync(h.outDir)).toEqual([]);
    expect(configFiles()).toEqual([]);
    expect(readdirSync(h.runsDir)).toEqual(["run-00000000-0000-4000-8000-000000000001"]);
  });

  it("a child that cannot be started ends failed / spawn_failed", async () => {
    h.child = childCommand(join(h.dir.path, "no-such-binary"));
    const result = await h.run(h.request());
    expect(result).toMatchObject({ status: "failed", failure_reason: "spawn_failed" });
    expect(configFiles()).toEqual([]);
  });

  it("keeps only the last 50 lines as the tail", async () => {
    const result = await h.run(h.request({ extra_env: { FAKE_MODE: "lines", LINES: "500" } }));
    expect(result.status).toBe("ok");
    expect(result.log_tail).toHaveLength(50);
    // The run's one ending closes the log (the child's run_complete record is not shown)
    expect(result.log_tail.at(-1)).toBe("\u001e── run ok");
    expect(result.log_tail[0]).toContain("***=[REDACTED]");
  });
});

describe("stopping", () => {
  it("timeout (0.05 min = 3 s): status timeout, the child and its grandchild gone within 8 s of the timeout", async () => {
    let pid = 0;
    const t0 = Date.now();
    const result = await h.run(h.request({ timeout_minutes: 0.05, extra_env: { FAKE_MODE: "sleep" } }), { runId: "run-to", onSpawn: (p) => (pid = p) });
    const fired = t0 + 3000;
    expect(result).toMatchObject({ status: "timeout", failure_reason: "timeout" });
    expect(Date.now() - fired).toBeLessThan(8000);
    const grandchild = Number(readFileSync(join(h.outDir, "grandchild-run-to"), "utf8"));
    expect(processAlive(pid)).toBe(false);
    expect(processAlive(grandchild)).toBe(false);
    expect(groupAlive(pid)).toBe(false);
    expect(auditRows().at(-1)).toMatchObject({ type: "sandcastle_run_failed", failure_reason: "timeout" });
  });

  it("a child that ignores SIGTERM is killed after the 5 s grace", async () => {
    const stop = new AbortController();
    let pid = 0;
    const run = h.run(h.request({ extra_env: { FAKE_MODE: "ignore-term" } }), { signal: stop.signal, runId: "run-ign", onSpawn: (p) => (pid = p) });
    await waitFor(() => existsSync(join(h.outDir, "ready-run-ign")), 10_000);
    const t0 = Date.now();
    stop.abort({ reason: "cancelled", by: "cli:test" });
    const result = await run;
    const took = Date.now() - t0;
    expect(result).toMatchObject({ status: "killed", failure_reason: "cancelled" });
    expect(took).toBeGreaterThanOrEqual(4500);
    expect(took).toBeLessThan(9000);
    expect(processAlive(pid)).toBe(false);
    expect(result.log_tail).toContain("ignoring SIGTERM");
    expect(auditRows().at(-1)).toMatchObject({ type: "sandcastle_run_failed", failure_reason: "cancelled", requested_by: "cli:test" });
  });
});

describe("pre-flight", () => {
  it("kill switch on (Redis) → skipped / kill_switch_active, nothing launched, no manifest resolved", async () => {
    await h.killSwitch.set(true, "test");
    delete h.secretSource.ANTHROPIC_API_KEY;
    const result = await h.run(h.request());
    expect(result).toMatchObject({ status: "skipped", skip_reason: "kill_switch_active" });
    expect(readdirSync(h.outDir)).toEqual([]);
    expect(auditRows().map((r) => r.type)).toEqual(["sandcastle_run_skipped"]);
  });

  it("kill switch file present → skipped / kill_switch_active", async () => {
    writeFileSync(h.killSwitchFile, "");
    expect(await h.run(h.request())).toMatchObject({ status: "skipped", skip_reason: "kill_switch_active" });
  });

  it("TAO_SANDCASTLE_ENABLED not 1 → skipped / sandcastle_disabled, no subprocess", async () => {
    h.enabled = false;
    const result = await h.run(h.request());
    expect(result).toMatchObject({ status: "skipped", skip_reason: "sandcastle_disabled", commits: [] });
    expect(readdirSync(h.outDir)).toEqual([]);
  });

  it("all slots taken and on_capacity skip → skipped / concurrency_cap", async () => {
    for (const id of ["a", "b", "c"]) expect(await h.slots.acquire(`other-${id}`)).toBe(true);
    const result = await h.run(h.request({ on_capacity: "skip" }));
    expect(result).toMatchObject({ status: "skipped", skip_reason: "concurrency_cap" });
    expect(readdirSync(h.outDir)).toEqual([]);
  });
});
