// The run pipeline in-process, on the real test Redis and real files: for tests of src/sandcastle/worker/runner.
import { mkdirSync, writeFileSync } from "node:fs";
import { join, resolve } from "node:path";
import { Redis } from "ioredis";
import { AuditLog } from "../../src/audit/audit-log.js";
import { StreamAppender } from "../../src/redis/stream-appender.js";
import { KillSwitch } from "../../src/control/kill-switch.js";
import { createLogger } from "../../src/log.js";
import { createRedactor } from "../../src/redact/index.js";
import { childCommand, type ChildCommand } from "../../src/sandcastle/worker/child-command.js";
import { SandcastleRunRequest, type SandcastleRunRequestInput, type SandcastleRunResult } from "../../src/sandcastle/contract.js";
import { deploymentLabel } from "../../src/sandcastle/deployment.js";
import { RunSlots } from "../../src/sandcastle/worker/run-slots.js";
import { runSandcastle, type RunnerDeps } from "../../src/sandcastle/worker/runner.js";
import { readSessionLog, sessionLogKey, sessionLogSink } from "../../src/session-log/session-log.js";
import { deletePrefix, redisUrl, tempDir, uniquePrefix } from "./scope.js";

export const FAKE_CHILD = resolve(import.meta.dirname, "../fixtures/children/fake-child.mjs");

export class RunHarness {
  readonly prefix = uniquePrefix();
  readonly dir = tempDir("scqr");
  readonly redis = new Redis(redisUrl());
  readonly logAppender = new StreamAppender({ kind: "url", url: redisUrl() });
  readonly configDir = join(this.dir.path, "shm");
  readonly manifestDir = join(this.dir.path, "manifests");
  readonly outDir = join(this.dir.path, "out");
  readonly runsDir = join(this.dir.path, "runs");
  readonly auditPath = join(this.dir.path, "audit.jsonl");
  readonly audit = new AuditLog(this.auditPath, createRedactor());
  readonly killSwitchFile = join(this.dir.path, "KILL");
  readonly killSwitch = new KillSwitch(this.redis, this.prefix, this.killSwitchFile);
  readonly slots = new RunSlots(this.redis, this.prefix, 3);
  secretSource: NodeJS.ProcessEnv = { PATH: process.env.PATH, HOME: process.env.HOME, ANTHROPIC_API_KEY: "sk-ant-api03-realistic-secret-value-0123456789" };
  child: ChildCommand = childCommand(FAKE_CHILD);
  enabled = true;
  graceMs: number | undefined;
  private seq = 0;

  constructor() {
    for (const d of [this.configDir, this.manifestDir, this.outDir]) mkdirSync(d, { recursive: true });
    writeFileSync(join(this.manifestDir, "proj.json"), JSON.stringify({ project_slug: "proj", vars: ["ANTHROPIC_API_KEY"] }));
  }

  deps(): RunnerDeps {
    return {
      sandcastleEnabled: this.enabled,
      child: this.child,
      configDir: this.configDir,
      deployment: deploymentLabel(this.prefix, { kind: "url", url: redisUrl() }),
      envManifestDir: this.manifestDir,
      runsDir: this.runsDir,
      secretSource: this.secretSource,
      childPath: process.env.PATH ?? "",
      childHome: process.env.HOME ?? "/tmp",
      killSwitch: this.killSwitch,
      slots: this.slots,
      audit: this.audit,
      log: createLogger("silent"),
      ...(this.graceMs !== undefined ? { graceMs: this.graceMs } : {}),
    };
  }

  request(patch: Partial<SandcastleRunRequestInput> & { extra_env?: Record<string, string> } = {}): SandcastleRunRequest {
    return SandcastleRunRequest.parse({
      session_id: `sess-${this.seq}`,
      agent: "script",
      sandbox: "noSandbox",
      dry_run: true,
      prompt_template_dir: this.dir.path,
      branch: `agent/t-${this.seq}`,
      repo_workdir: this.dir.path,
      env_manifest_name: "proj",
      timeout_minutes: 1,
      ...patch,
      extra_env: { OUT_DIR: this.outDir, ...patch.extra_env },
    });
  }

  async run(request: SandcastleRunRequest, opts: { signal?: AbortSignal; runId?: string; onSpawn?: (pid: number) => void } = {}): Promise<SandcastleRunResult> {
    this.seq += 1;
    const runId = opts.runId ?? `run-t${this.seq}-${Date.now()}`;
    return runSandcastle(
      {
        runId,
        request,
        signal: opts.signal ?? new AbortController().signal,
        sinks: [sessionLogSink(this.logAppender, sessionLogKey(this.prefix, request.session_id))],
        ...(opts.onSpawn ? { onSpawn: opts.onSpawn } : {}),
      },
      this.deps(),
    );
  }

  sessionLog(sessionId: string): Promise<string[]> {
    return readSessionLog(this.redis, sessionLogKey(this.prefix, sessionId));
  }

  async close(): Promise<void> {
    await this.audit.close();
    this.logAppender.close();
    this.redis.disconnect();
    await deletePrefix(redisUrl(), this.prefix);
    this.dir.remove();
  }
}
