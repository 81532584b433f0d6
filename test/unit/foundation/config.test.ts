import { describe, expect, it } from "vitest";
import { ConfigError, loadConfig } from "../../../src/config.js";

function problemsOf(env: NodeJS.ProcessEnv): string[] {
  try {
    loadConfig(env);
  } catch (err) {
    if (err instanceof ConfigError) return [...err.problems];
    throw err;
  }
  throw new Error("expected a ConfigError");
}

describe("config", () => {
  it("gives DESIGN.md's defaults for an empty environment", () => {
    const c = loadConfig({});
    expect(c.MAX_CONCURRENT_SANDCASTLE_RUNS).toBe(3);
    expect(c.HOST).toBe("127.0.0.1");
    expect(c.PORT).toBe(3000);
    expect(c.SCQ_DATA_DIR).toBe("./.data");
    expect(c.SCQ_KEY_PREFIX).toBe("{scq}");
    expect(c.sandcastleEnabled).toBe(false);
    expect(c.AUDIT_LOG_PATH).toBe(".harness/swarm.jsonl");
    expect(c.runsDir).toBe("./.data/runs");
    expect(c.destructiveVerbs).toContain("truncate");
  });

  it("names the variable and what it takes, for each bad value", () => {
    const cases: Array<[NodeJS.ProcessEnv, RegExp]> = [
      [{ PORT: "eighty" }, /^PORT: takes a whole number/],
      [{ PORT: "70000" }, /^PORT: takes a number ≤ 65535/],
      [{ MAX_CONCURRENT_SANDCASTLE_RUNS: "0" }, /^MAX_CONCURRENT_SANDCASTLE_RUNS: takes a number ≥ 1/],
      [{ REDIS_URL: "localhost:6379" }, /^REDIS_URL: takes a redis:\/\/ or rediss:\/\/ URL/],
      [{ SCQ_KEY_PREFIX: "scq" }, /^SCQ_KEY_PREFIX: takes a hash-tagged prefix/],
      [{ LINEAR_API_URL: "not a url" }, /^LINEAR_API_URL: takes a URL/],
      [{ SCQ_BOARD_READ_ONLY: "yes" }, /^SCQ_BOARD_READ_ONLY: takes "0" or "1"/],
      [{ SCQ_API_TOKEN: "short" }, /^SCQ_API_TOKEN: must be at least 16 characters/],
    ];
    for (const [env, pattern] of cases) {
      const problems = problemsOf(env);
      expect(problems, JSON.stringify(env)).toHaveLength(1);
      expect(problems[0]).toMatch(pattern);
    }
  });

  it("lists every problem at once and never echoes a value", () => {
    const err = (() => {
      try {
        loadConfig({ PORT: "x", SCQ_API_TOKEN: "hunter2-secret", TELEGRAM_WEBHOOK_SECRET: "bad secret!" });
      } catch (e) {
        return e as ConfigError;
      }
      throw new Error("expected an error");
    })();
    expect(err.problems.map((p) => p.split(":")[0]).sort()).toEqual(["PORT", "SCQ_API_TOKEN", "TELEGRAM_WEBHOOK_SECRET"]);
    expect(err.message).not.toContain("hunter2-secret");
    expect(err.message).not.toContain("bad secret!");
  });

  it("treats empty variables as unset", () => {
    expect(loadConfig({ PORT: "", REDIS_URL: "" }).PORT).toBe(3000);
  });

  it("container settings: defaults, the engine's own variables, and clear refusals", () => {
    const c = loadConfig({});
    expect(c.SANDCASTLE_IMAGE).toBe("localhost/sandcastle-queue-agent:latest");
    expect([c.SANDCASTLE_CONTAINER_MEMORY, c.SANDCASTLE_CONTAINER_CPUS, c.SANDCASTLE_CONTAINER_PIDS]).toEqual(["4g", 2, 1024]);
    expect(c.SANDCASTLE_CONTAINER_CLI).toBeUndefined();
    expect(c.engineEnv).toEqual({});
    const set = loadConfig({ CONTAINERS_CONF: "/etc/scq/containers.conf", DOCKER_HOST: "unix:///run/docker.sock", SANDCASTLE_CONTAINER_CPUS: "1.5", UNRELATED: "x" });
    expect(set.engineEnv).toEqual({ CONTAINERS_CONF: "/etc/scq/containers.conf", DOCKER_HOST: "unix:///run/docker.sock" });
    expect(set.SANDCASTLE_CONTAINER_CPUS).toBe(1.5);
    const cases: Array<[NodeJS.ProcessEnv, RegExp]> = [
      [{ SANDCASTLE_IMAGE: "--privileged" }, /^SANDCASTLE_IMAGE: must be an image reference/],
      [{ SANDCASTLE_CONTAINER_MEMORY: "lots" }, /^SANDCASTLE_CONTAINER_MEMORY: takes a size such as 4g/],
      [{ SANDCASTLE_CONTAINER_CPUS: "0" }, /^SANDCASTLE_CONTAINER_CPUS: takes a number > 0/],
      [{ SANDCASTLE_CONTAINER_PIDS: "8" }, /^SANDCASTLE_CONTAINER_PIDS: takes a number ≥ 16/],
    ];
    for (const [env, pattern] of cases) expect(problemsOf(env)).toEqual([expect.stringMatching(pattern)]);
  });
});
