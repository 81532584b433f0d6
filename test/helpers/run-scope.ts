// A sandcastle-queue deployment for process-level tests: its own key prefix, dirs, manifests and env.
import { existsSync, mkdirSync, readFileSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { Queue } from "bullmq";
import { parseJsonl } from "../../src/audit/jsonl-appender.js";
import { cliEnv } from "./cli.js";
import { FAKE_CHILD } from "./run-harness.js";
import type { RedisClient } from "../../src/redis/connect.js";
import { deploymentLabel } from "../../src/sandcastle/deployment.js";
import { readMetaWhenKept, type RetainedMeta } from "../../src/sandcastle/retention/retained-runs.js";
import { sharedRedis, tempDir, uniquePrefix, type RedisBackend } from "./scope.js";

export const SECRET_VALUE = "sk-ant-api03-process-level-secret-abcdef0123456789";

export class RunScope {
  readonly prefix = uniquePrefix();
  readonly dir = tempDir("scqw");
  readonly outDir = join(this.dir.path, "out");
  readonly configDir = join(this.dir.path, "shm");
  readonly manifestDir = join(this.dir.path, "manifests");
  readonly auditPath = join(this.dir.path, "audit.jsonl");
  /** Retained run workspaces (RUNS_DIR): inside the scope, never the user's state directory. */
  readonly runsDir = join(this.dir.path, "runs");
  readonly redis: RedisClient;
  readonly queue: Queue;

  constructor(readonly backend: RedisBackend = sharedRedis()) {
    this.redis = backend.client();
    this.queue = new Queue("sandcastle-run", { connection: this.redis, prefix: this.prefix });
    for (const d of [this.outDir, this.configDir, this.manifestDir]) mkdirSync(d, { recursive: true });
    writeFileSync(join(this.manifestDir, "proj.json"), JSON.stringify({ project_slug: "proj", vars: ["ANTHROPIC_API_KEY"] }));
  }

  /** The deployment label its workers put on containers and run directories (key prefix + Redis). */
  get deployment(): string {
    const url = this.backend.env.REDIS_URL;
    if (url === undefined) throw new Error("RunScope.deployment: only for a scope on one Redis (REDIS_URL)");
    return deploymentLabel(this.prefix, { kind: "url", url });
  }

  env(extra: Record<string, string | undefined> = {}): NodeJS.ProcessEnv {
    return cliEnv({
      ...this.backend.env,
      SCQ_KEY_PREFIX: this.prefix,
      TAO_SANDCASTLE_ENABLED: "1",
      SANDCASTLE_BIN: FAKE_CHILD,
      SANDCASTLE_CONFIG_DIR: this.configDir,
      ENV_MANIFEST_DIR: this.manifestDir,
      AUDIT_LOG_PATH: this.auditPath,
      RUNS_DIR: this.runsDir,
      ANTHROPIC_API_KEY: SECRET_VALUE,
      SCQ_LOCK_DURATION_MS: "3000",
      SCQ_STALLED_INTERVAL_MS: "1000",
      ...extra,
    });
  }

  request(patch: Record<string, unknown> = {}, extraEnv: Record<string, string> = {}): Record<string, unknown> {
    return {
      session_id: `sess-${Math.random().toString(36).slice(2, 10)}`,
      agent: "script",
      sandbox: "noSandbox",
      dry_run: true,
      prompt_template_dir: this.dir.path,
      branch: "agent/t",
      repo_workdir: this.dir.path,
      env_manifest_name: "proj",
      timeout_minutes: 1,
      ...patch,
      extra_env: { OUT_DIR: this.outDir, ...extraEnv },
    };
  }

  auditRows(): Array<Record<string, unknown>> {
    return parseJsonl(existsSync(this.auditPath) ? readFileSync(this.auditPath, "utf8") : "") as Array<Record<string, unknown>>;
  }

  /** How many times each run's child started (fake-child.mjs and tally-child.sh append one line per start). */
  tally(): Map<string, number> {
    const path = join(this.outDir, "tally");
    const counts = new Map<string, number>();
    if (!existsSync(path)) return counts;
    for (const id of readFileSync(path, "utf8").split("\n").filter(Boolean)) counts.set(id, (counts.get(id) ?? 0) + 1);
    return counts;
  }

  started(runId: string): string {
    return join(this.outDir, `started-${runId}`);
  }

  /**
   * Once the run's worker is done keeping it: its retained.json, or null when it keeps nothing. A run's result is
   * readable before its workspace is kept (ADR 0051); its keeper's lock is taken before the result, so this never misses it.
   */
  keepSettled(runId: string): Promise<RetainedMeta | null> {
    return readMetaWhenKept(this.runsDir, runId);
  }

  /** The run's retained.json once its worker has kept it; an error when it kept nothing. */
  async kept(runId: string): Promise<RetainedMeta> {
    const meta = await this.keepSettled(runId);
    if (meta === null) throw new Error(`${runId} was not retained in ${this.runsDir}`);
    return meta;
  }

  async close(): Promise<void> {
    await this.queue.close();
    this.redis.disconnect();
    await this.backend.deletePrefix(this.prefix);
    this.dir.remove();
  }
}

export { gitOut, makeGitRepo } from "./git-repo.js";
