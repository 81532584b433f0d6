// Schema refusals at enqueue: the message names the field, and nothing reaches Redis.
import { mkdirSync, symlinkSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { Redis } from "ioredis";
import { enqueueRun, openQueues, type Queues } from "../../../queues/index.js";
import { InvalidInputError } from "../../../src/invalid-input.js";
import { MAX_TIMEOUT_MINUTES } from "../../../src/sandcastle/contract.js";
import { deletePrefix, redisUrl, tempDir, uniquePrefix } from "../../helpers/scope.js";

const prefix = uniquePrefix();
const dir = tempDir();
const manifestDir = join(dir.path, "manifests");
let redis: Redis;
let queues: Queues;

const good = () => ({
  session_id: "sess-1",
  agent: "script",
  sandbox: "noSandbox",
  dry_run: true,
  prompt_template_dir: "/tmp/templates",
  branch: "agent/fix-42",
  repo_workdir: "/tmp/repo",
  env_manifest_name: "restoreassist",
});

beforeAll(() => {
  mkdirSync(manifestDir, { recursive: true });
  writeFileSync(
    join(manifestDir, "restoreassist.json"),
    JSON.stringify({ project_slug: "restoreassist", vars: ["ANTHROPIC_API_KEY", "GITHUB_TOKEN", "REGION"] }),
  );
  redis = new Redis(redisUrl());
  queues = openQueues(redis, prefix);
});

afterAll(async () => {
  await queues.close();
  redis.disconnect();
  await deletePrefix(redisUrl(), prefix);
  dir.remove();
});

async function refusal(patch: Record<string, unknown>): Promise<string> {
  const input = { ...good(), ...patch };
  for (const [k, v] of Object.entries(patch)) if (v === undefined) delete (input as Record<string, unknown>)[k];
  try {
    await enqueueRun(queues.sandcastleRun, input, { envManifestDir: manifestDir });
  } catch (err) {
    expect(err).toBeInstanceOf(InvalidInputError);
    return (err as Error).message;
  }
  throw new Error(`expected a refusal for ${JSON.stringify(patch)}`);
}

describe("sandcastle-run payload refusals", () => {
  const cases: Array<[string, Record<string, unknown>, RegExp]> = [
    ["relative prompt_template_dir", { prompt_template_dir: "templates/x" }, /prompt_template_dir: prompt_template_dir must be an absolute path/],
    ["relative repo_workdir", { repo_workdir: "./repo" }, /repo_workdir: .*absolute path/],
    ["manifest name with /", { env_manifest_name: "a/b" }, /env_manifest_name: must be a plain name/],
    ["manifest name with ..", { env_manifest_name: "..x" }, /env_manifest_name: must be a plain name/],
    ["empty manifest name", { env_manifest_name: "" }, /env_manifest_name: must be a plain name/],
    ["extra_env key not an env name", { extra_env: { "1BAD-NAME": "x" } }, /extra_env.1BAD-NAME: must be an environment variable name/],
    ["timeout 0", { timeout_minutes: 0 }, /timeout_minutes: must be greater than 0/],
    ["timeout negative", { timeout_minutes: -5 }, /timeout_minutes: must be greater than 0/],
    ["timeout above maximum", { timeout_minutes: MAX_TIMEOUT_MINUTES + 1 }, new RegExp(`timeout_minutes: must be at most ${MAX_TIMEOUT_MINUTES}`)],
    ["unknown field", { colour: "blue" }, /: colour: unknown field$/],
    // The project's words, never zod's ("Invalid input: expected number, received string").
    ["wrong type", { parallel_implementers: "3" }, /: parallel_implementers: must be a number, not a string$/],
    ["unknown agent", { agent: "gpt" }, /: agent: takes one of "claudeCode", "codex", "pi", "opencode", "script"$/],
    ["missing session_id", { session_id: undefined }, /: session_id: is required$/],
    ["bad branch", { branch: "../../etc" }, /branch: /],
    ["noSandbox outside dry run", { dry_run: false }, /sandbox: noSandbox is never used in an autonomy path/],
    ["secret-shaped extra_env", { extra_env: { STRIPE_SECRET: "x" } }, /extra_env.STRIPE_SECRET: the name holds "SECRET", so it looks like a secret: put it in the run.s env manifest/],
    ["extra_env overlapping the manifest", { extra_env: { REGION: "eu" } }, /extra_env: REGION also named by env manifest "restoreassist"/],
    ["missing manifest", { env_manifest_name: "nope" }, /env_manifest_name: env manifest "nope" not found/],
  ];

  for (const [name, patch, pattern] of cases) {
    it(`refuses ${name}`, async () => {
      expect(await refusal(patch)).toMatch(pattern);
    });
  }

  it("enqueued nothing for any refusal, and accepts the good request with the documented defaults (README)", async () => {
    expect(await queues.sandcastleRun.count()).toBe(0);
    const { runId, request } = await enqueueRun(queues.sandcastleRun, good(), { envManifestDir: manifestDir });
    expect(runId).toMatch(/^run-[0-9a-f-]{36}$/);
    expect(request).toMatchObject({ parallel_implementers: 1, timeout_minutes: 30, extra_env: {}, on_capacity: "wait" });
    const job = await queues.sandcastleRun.getJob(runId);
    expect(job?.data).toEqual(request);
    expect(job?.opts.attempts).toBe(1);
  });
});

describe("a request reaching into RUNS_DIR", () => {
  it("is refused for either path, through a symlink or `..` too, naming the field; nothing is enqueued", async () => {
    const runsDir = join(dir.path, "runs");
    const retained = join(runsDir, "run-00000000-0000-4000-8000-000000000001");
    mkdirSync(join(retained, "workspace"), { recursive: true });
    mkdirSync(join(retained, "job", "prompt"), { recursive: true });
    mkdirSync(join(dir.path, "elsewhere"));
    symlinkSync(retained, join(dir.path, "link-to-run"));
    symlinkSync(join(retained, "workspace"), join(dir.path, "elsewhere", "link-to-workspace"));
    symlinkSync(runsDir, join(dir.path, "runs-link"));
    const refusal = async (patch: Record<string, unknown>, runs = runsDir) => {
      try {
        await enqueueRun(queues.sandcastleRun, { ...good(), ...patch }, { envManifestDir: manifestDir, runsDir: runs });
      } catch (err) {
        expect(err).toBeInstanceOf(InvalidInputError);
        return (err as InvalidInputError).message;
      }
      throw new Error(`expected a refusal for ${JSON.stringify(patch)}`);
    };
    const before = await queues.sandcastleRun.count();
    const why = "retained run workspaces are never mounted into another run";
    expect(await refusal({ repo_workdir: join(retained, "workspace") })).toBe(
      `invalid sandcastle-run request: repo_workdir: ${retained}/workspace lies inside RUNS_DIR ${runsDir}: ${why}`,
    );
    expect(await refusal({ prompt_template_dir: join(retained, "job", "prompt") })).toBe(
      `invalid sandcastle-run request: prompt_template_dir: ${retained}/job/prompt lies inside RUNS_DIR ${runsDir}: ${why}`,
    );
    expect(await refusal({ repo_workdir: runsDir })).toMatch(/^invalid sandcastle-run request: repo_workdir: .* lies inside RUNS_DIR/);
    // A symlink into it, a path that does not exist yet under one, and `..` after a symlink (resolved as the kernel does).
    expect(await refusal({ repo_workdir: join(dir.path, "link-to-run", "workspace") })).toBe(
      `invalid sandcastle-run request: repo_workdir: ${dir.path}/link-to-run/workspace lies inside RUNS_DIR ${runsDir} (it resolves to ${retained}/workspace, RUNS_DIR to ${runsDir}): ${why}`,
    );
    expect(await refusal({ prompt_template_dir: join(dir.path, "link-to-run", "not-yet", "prompt") })).toMatch(/^invalid sandcastle-run request: prompt_template_dir: .* lies inside RUNS_DIR/);
    expect(await refusal({ prompt_template_dir: `${dir.path}/elsewhere/link-to-workspace/../job/prompt` })).toMatch(
      new RegExp(`prompt_template_dir: .* \\(it resolves to ${retained}/job/prompt,`),
    );
    expect(await refusal({ repo_workdir: `${dir.path}/elsewhere/../runs/run-x` })).toMatch(/^invalid sandcastle-run request: repo_workdir: .* lies inside RUNS_DIR/);
    // RUNS_DIR given through a symlink, the request by its real path; both fields named at once.
    const both = await refusal({ repo_workdir: join(retained, "workspace"), prompt_template_dir: join(retained, "job") }, join(dir.path, "runs-link"));
    expect(both).toMatch(/^invalid sandcastle-run request: repo_workdir: .* lies inside RUNS_DIR .*runs-link \(it resolves to .*, RUNS_DIR to .*\/runs\): .*; prompt_template_dir: .* lies inside RUNS_DIR/);
    expect(await queues.sandcastleRun.count()).toBe(before);

    // A neighbour whose name only starts like RUNS_DIR is not in it.
    mkdirSync(join(dir.path, "runs-other"));
    const { runId } = await enqueueRun(
      queues.sandcastleRun,
      { ...good(), repo_workdir: join(dir.path, "runs-other") },
      { envManifestDir: manifestDir, runsDir },
    );
    expect(await queues.sandcastleRun.getJob(runId)).toBeDefined();
  });
});
