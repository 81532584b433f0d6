// Fault: the audit log cannot be written (a file stands where its directory should be, which root cannot override).
// Guarantee: no run starts without its audit trail; its result says why, naming the path; the worker keeps
// serving, and once the path is fixed the next run is audited and runs.
import { readdirSync, rmSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { afterEach, beforeEach, describe, expect, it } from "vitest";
import { SandcastleRunResult } from "../../../src/sandcastle/contract.js";
import { CliProcess, lastJsonLine, runCli, stopAllCli } from "../../helpers/cli.js";
import { RunScope } from "../../helpers/run-scope.js";

let s: RunScope;
beforeEach(() => {
  s = new RunScope();
});
afterEach(async () => {
  await stopAllCli();
  await s.close();
});

describe("audit path unwritable", () => {
  it("the run does not start and its result names the audit path and the error; fixed, the same worker runs the next one", async () => {
    const blocker = join(s.dir.path, "not-a-dir");
    writeFileSync(blocker, "");
    const auditPath = join(blocker, "audit.jsonl");
    const env = s.env({ AUDIT_LOG_PATH: auditPath });
    const worker = new CliProcess(["worker"], env);
    await worker.waitForOutput(/workers running/);
    const enqueue = () => runCli(["enqueue", "sandcastle-run", "--request", "-", "--wait"], env, { input: JSON.stringify(s.request()), timeoutMs: 60_000 });

    const refused = await enqueue();
    expect(refused.code, refused.stderr).toBe(0);
    const result = SandcastleRunResult.parse(lastJsonLine(refused.stdout));
    expect(result).toMatchObject({ status: "failed", failure_reason: "audit_unwritable", audit_row_count: 0 });
    expect(result.message).toContain(auditPath);
    expect(result.message).toMatch(/EEXIST|ENOTDIR/);
    // Nothing started: no child, no run dir (where the secrets would have gone).
    expect(s.tally().size).toBe(0);
    expect(readdirSync(s.configDir)).toEqual([]);

    rmSync(blocker);
    const next = await enqueue();
    expect(next.code, next.stderr).toBe(0);
    const ok = SandcastleRunResult.parse(lastJsonLine(next.stdout));
    expect(ok).toMatchObject({ status: "ok", audit_row_count: 3 });
    expect(s.tally().get(ok.run_id)).toBe(1);
    expect(worker.child.exitCode).toBeNull();
  }, 90_000);
});
