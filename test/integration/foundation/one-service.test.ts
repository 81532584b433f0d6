// One service per user: with no REDIS_URL and no SCQ_DATA_DIR, every command of one user reaches the same
// embedded Redis wherever it is started; a command that would start a second one elsewhere says so.
import { mkdirSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { afterEach, beforeEach, describe, expect, it } from "vitest";
import { StatusReport } from "../../../queues/status.js";
import { CliProcess, cliEnv, lastJsonLine, runCli, stopAllCli } from "../../helpers/cli.js";
import { tempDir } from "../../helpers/scope.js";

let dir: ReturnType<typeof tempDir>;
let home: string;
let env: NodeJS.ProcessEnv;

beforeEach(() => {
  dir = tempDir("scq1");
  home = join(dir.path, "h");
  mkdirSync(join(dir.path, "a"), { recursive: true });
  mkdirSync(join(dir.path, "b"), { recursive: true });
  env = cliEnv({ HOME: home, PORT: "0", TAO_SANDCASTLE_ENABLED: undefined });
});
afterEach(async () => {
  await stopAllCli();
  dir.remove();
});

describe("one service per user", () => {
  it("the CLI from another directory reaches the same service; manifests resolve against the documented base, not the cwd", async () => {
    const state = join(home, ".local/state/sandcastle-queue");
    const manifests = join(state, ".harness/env-manifests");
    mkdirSync(manifests, { recursive: true });
    writeFileSync(join(manifests, "proj.json"), JSON.stringify({ project_slug: "proj", vars: [] }));
    const service = new CliProcess(["start"], env, join(dir.path, "a"));
    await service.waitForOutput(/workers \+ http running/);
    // Runs are disabled (no TAO_SANDCASTLE_ENABLED): start says so.
    expect(service.stderr).toMatch(/runs are disabled \(TAO_SANDCASTLE_ENABLED is not 1\)/);

    // From directory b, with a relative repo path: resolved against b, the manifest against the state dir.
    mkdirSync(join(dir.path, "b", "repo"));
    const request = {
      session_id: "one-svc",
      agent: "script",
      sandbox: "noSandbox",
      dry_run: true,
      prompt_template_dir: join(dir.path, "b"),
      branch: "agent/x",
      repo_workdir: "repo",
      env_manifest_name: "proj",
    };
    const enq = await runCli(["enqueue", "sandcastle-run", "--request", "-", "--wait"], env, { input: JSON.stringify(request), cwd: join(dir.path, "b") });
    expect(enq.code, enq.stderr).toBe(0);
    expect(lastJsonLine(enq.stdout)).toMatchObject({ status: "skipped", skip_reason: "sandcastle_disabled", message: expect.stringMatching(/TAO_SANDCASTLE_ENABLED=1/) });

    const status = await runCli(["status", "--json"], env, { cwd: join(dir.path, "b") });
    expect(status.code, status.stderr).toBe(0);
    const report = StatusReport.parse(lastJsonLine(status.stdout));
    expect(report.redis).toEqual({ url: `unix://${join(state, "redis/redis.sock")}`, embedded: true });
    // The skipped run is a failed job (it did not end ok), visible from b.
    expect(report.queues["sandcastle-run"]).toMatchObject({ failed: 1, completed: 0 });
    expect(status.stderr).not.toMatch(/warning/);

    // Another data dir would start a second, empty Redis: the CLI says where the live one is.
    const other = await runCli(["status", "--json"], { ...env, SCQ_DATA_DIR: join(dir.path, "other") });
    expect(other.code).toBe(0);
    expect(other.stderr).toContain(`one is live in ${state}: set SCQ_DATA_DIR=${state} to reach that service`);
    expect(StatusReport.parse(lastJsonLine(other.stdout)).queues["sandcastle-run"]).toMatchObject({ failed: 0 });
    await service.stop();
  });
});
