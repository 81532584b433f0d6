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
  it("gives the documented defaults for an empty environment: state in the user's XDG state dir, whatever the cwd", () => {
    const c = loadConfig({ HOME: "/home/ops" });
    expect(c.MAX_CONCURRENT_SANDCASTLE_RUNS).toBe(3);
    expect(c.MARGOT_CONCURRENCY).toBe(64);
    expect(c.HOST).toBe("127.0.0.1");
    expect(c.PORT).toBe(3000);
    expect(c.SCQ_DATA_DIR).toBe("/home/ops/.local/state/sandcastle-queue");
    expect(c.SCQ_BASE_DIR).toBe(c.SCQ_DATA_DIR);
    expect(c.SCQ_KEY_PREFIX).toBe("{scq}");
    expect(c.sandcastleEnabled).toBe(false);
    expect(c.AUDIT_LOG_PATH).toBe("/home/ops/.local/state/sandcastle-queue/.harness/swarm.jsonl");
    expect(c.ENV_MANIFEST_DIR).toBe("/home/ops/.local/state/sandcastle-queue/.harness/env-manifests");
    expect(c.runsDir).toBe("/home/ops/.local/state/sandcastle-queue/runs");
    expect(c.destructiveVerbs).toContain("truncate");
    expect(c.SCQ_ACCESS_LOG_LEVEL).toBe("info");
    expect(loadConfig({ HOME: "/home/ops", XDG_STATE_HOME: "/var/state/ops" }).SCQ_DATA_DIR).toBe("/var/state/ops/sandcastle-queue");
  });

  it("resolves relative path settings against SCQ_BASE_DIR (default SCQ_DATA_DIR), never the working directory", () => {
    const c = loadConfig({
      SCQ_DATA_DIR: "/srv/scq",
      SCQ_BASE_DIR: "/home/ops/pi-ceo",
      ENV_MANIFEST_DIR: ".harness/env-manifests",
      AUDIT_LOG_PATH: "/abs/audit.jsonl",
      KILL_SWITCH_FILE: "KILL",
    });
    expect(c.ENV_MANIFEST_DIR).toBe("/home/ops/pi-ceo/.harness/env-manifests");
    expect(c.AUDIT_LOG_PATH).toBe("/abs/audit.jsonl");
    expect(c.KILL_SWITCH_FILE).toBe("/home/ops/pi-ceo/KILL");
    expect(loadConfig({ SCQ_DATA_DIR: "/srv/scq", PROJECTS_CONFIG_PATH: "p.json" }).PROJECTS_CONFIG_PATH).toBe("/srv/scq/p.json");
  });

  it("refuses a viewer token without an admin token, equal to it, and allowed hosts without a token", () => {
    expect(problemsOf({ SCQ_VIEWER_TOKEN: "viewer-token-0123456789" })).toEqual([expect.stringMatching(/^SCQ_VIEWER_TOKEN: needs SCQ_API_TOKEN/)]);
    expect(problemsOf({ SCQ_API_TOKEN: "same-token-0123456789", SCQ_VIEWER_TOKEN: "same-token-0123456789" })).toEqual([expect.stringMatching(/^SCQ_VIEWER_TOKEN: must differ/)]);
    expect(problemsOf({ SCQ_ALLOWED_HOSTS: "queue.example.com" })).toEqual([expect.stringMatching(/^SCQ_ALLOWED_HOSTS: needs SCQ_API_TOKEN/)]);
    expect(loadConfig({ SCQ_API_TOKEN: "admin-token-0123456789", SCQ_ALLOWED_HOSTS: "Queue.Example.com, 10.0.0.5" }).allowedHosts).toEqual([
      "queue.example.com",
      "10.0.0.5",
    ]);
  });

  it("REDIS_CLUSTER_NODES names a cluster's seed nodes, with its own credentials; REDIS_URL beside it is refused", () => {
    const c = loadConfig({
      REDIS_CLUSTER_NODES: "10.0.0.1:7000, redis-b:7001,[::1]:7002",
      REDIS_CLUSTER_USERNAME: "scq",
      REDIS_CLUSTER_PASSWORD: "cluster-pass-word",
      REDIS_CLUSTER_TLS: "1",
    });
    expect(c.redisCluster).toEqual({
      nodes: [
        { host: "10.0.0.1", port: 7000 },
        { host: "redis-b", port: 7001 },
        { host: "::1", port: 7002 },
      ],
      username: "scq",
      password: "cluster-pass-word",
      tls: true,
    });
    expect(loadConfig({}).redisCluster).toBeNull();
    expect(problemsOf({ REDIS_CLUSTER_NODES: "10.0.0.1:7000", REDIS_URL: "redis://127.0.0.1:6379" })).toEqual([
      "REDIS_CLUSTER_NODES: set either REDIS_URL (one Redis) or REDIS_CLUSTER_NODES (a Redis Cluster), not both",
    ]);
    expect(problemsOf({ REDIS_CLUSTER_NODES: "10.0.0.1" })).toEqual(["REDIS_CLUSTER_NODES: takes seed nodes as host:port,host:port (IPv6 as [::1]:7000)"]);
    expect(problemsOf({ REDIS_CLUSTER_NODES: "a:1,b:99999" })).toEqual(["REDIS_CLUSTER_NODES: takes seed nodes as host:port,host:port (IPv6 as [::1]:7000)"]);
    const stray = problemsOf({ REDIS_CLUSTER_PASSWORD: "cluster-pass-word", REDIS_CLUSTER_TLS: "1" });
    expect(stray).toEqual([expect.stringMatching(/^REDIS_CLUSTER_PASSWORD: needs REDIS_CLUSTER_NODES/), expect.stringMatching(/^REDIS_CLUSTER_TLS: needs REDIS_CLUSTER_NODES/)]);
    expect(stray.join("\n")).not.toContain("cluster-pass-word");
  });

  it("LINEAR_LOCAL_FILE (the local mode) is off unless set, a path from SCQ_BASE_DIR, and refused beside LINEAR_API_KEY", () => {
    expect(loadConfig({}).LINEAR_LOCAL_FILE).toBeUndefined();
    expect(loadConfig({ LINEAR_LOCAL_FILE: "" }).LINEAR_LOCAL_FILE).toBeUndefined();
    expect(loadConfig({ SCQ_DATA_DIR: "/srv/scq", LINEAR_LOCAL_FILE: "local-issues.jsonl" }).LINEAR_LOCAL_FILE).toBe("/srv/scq/local-issues.jsonl");
    const both = problemsOf({ LINEAR_LOCAL_FILE: "/tmp/issues.jsonl", LINEAR_API_KEY: "lin_api_secretvalue0123456789" });
    expect(both).toEqual(["LINEAR_LOCAL_FILE: set either LINEAR_API_KEY (issues in Linear) or LINEAR_LOCAL_FILE (the local mode: issues in a file), not both"]);
    expect(both.join("\n")).not.toContain("lin_api_secretvalue");
  });

  it("names the variable and what it takes, for each bad value", () => {
    const cases: Array<[NodeJS.ProcessEnv, RegExp]> = [
      [{ PORT: "eighty" }, /^PORT: takes a whole number/],
      [{ PORT: "70000" }, /^PORT: takes a number ≤ 65535/],
      [{ MAX_CONCURRENT_SANDCASTLE_RUNS: "0" }, /^MAX_CONCURRENT_SANDCASTLE_RUNS: takes a number ≥ 1/],
      [{ MARGOT_CONCURRENCY: "0" }, /^MARGOT_CONCURRENCY: takes a number ≥ 1/],
      [{ MARGOT_CONCURRENCY: "5000" }, /^MARGOT_CONCURRENCY: takes a number ≤ 1024/],
      [{ MARGOT_CONCURRENCY: "many" }, /^MARGOT_CONCURRENCY: takes a whole number/],
      [{ REDIS_URL: "localhost:6379" }, /^REDIS_URL: takes a redis:\/\/ or rediss:\/\/ URL/],
      [{ SCQ_KEY_PREFIX: "scq" }, /^SCQ_KEY_PREFIX: takes a hash-tagged prefix/],
      [{ LINEAR_API_URL: "not a url" }, /^LINEAR_API_URL: takes a URL/],
      [{ SCQ_BOARD_READ_ONLY: "yes" }, /^SCQ_BOARD_READ_ONLY: takes "0" or "1"/],
      [{ SCQ_API_TOKEN: "short" }, /^SCQ_API_TOKEN: must be at least 16 characters/],
      [{ SCQ_ACCESS_LOG_LEVEL: "loud" }, /^SCQ_ACCESS_LOG_LEVEL: takes fatal, error, warn, info, debug, trace or silent$/],
      [{ LOG_LEVEL: "verbose" }, /^LOG_LEVEL: takes fatal, error, warn, info, debug, trace or silent$/],
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
      [{ SANDCASTLE_CONTAINER_NETWORK: "host" }, /^SANDCASTLE_CONTAINER_NETWORK: .*never host/],
      [{ SANDCASTLE_CONTAINER_NETWORK: "ns:/proc/1/ns/net" }, /^SANDCASTLE_CONTAINER_NETWORK: takes a network name or container:<name>/],
      [{ SANDCASTLE_CONTAINER_NETWORK: "container:a b" }, /^SANDCASTLE_CONTAINER_NETWORK: takes a network name or container:<name>/],
      [{ SANDCASTLE_TOKEN_BUDGET: "0" }, /^SANDCASTLE_TOKEN_BUDGET: takes a number ≥ 1/],
      [{ SANDCASTLE_AGENT_IDLE_SECONDS: "soon" }, /^SANDCASTLE_AGENT_IDLE_SECONDS: takes a whole number/],
    ];
    for (const [env, pattern] of cases) expect(problemsOf(env)).toEqual([expect.stringMatching(pattern)]);
  });

  it("real agents' settings: a network to join, a token budget, an idle bound", () => {
    const c = loadConfig({});
    expect([c.SANDCASTLE_CONTAINER_NETWORK, c.SANDCASTLE_TOKEN_BUDGET, c.SANDCASTLE_AGENT_IDLE_SECONDS]).toEqual([undefined, undefined, 600]);
    const set = loadConfig({ SANDCASTLE_CONTAINER_NETWORK: "container:model-proxy", SANDCASTLE_TOKEN_BUDGET: "2000000", SANDCASTLE_AGENT_IDLE_SECONDS: "120" });
    expect([set.SANDCASTLE_CONTAINER_NETWORK, set.SANDCASTLE_TOKEN_BUDGET, set.SANDCASTLE_AGENT_IDLE_SECONDS]).toEqual([
      "container:model-proxy",
      2_000_000,
      120,
    ]);
    expect(loadConfig({ SANDCASTLE_CONTAINER_NETWORK: "gateway-net" }).SANDCASTLE_CONTAINER_NETWORK).toBe("gateway-net");
  });

  it("retention bounds: SANDBOX_RETENTION_HOURS 0 is off, fractions are taken, and no value keeps forever; SANDBOX_PIN_DAYS is 1-365 days", () => {
    const c = loadConfig({});
    expect([c.SANDBOX_RETENTION_HOURS, c.SANDBOX_PIN_DAYS]).toEqual([24, 7]);
    expect(loadConfig({ SANDBOX_RETENTION_HOURS: "0" }).SANDBOX_RETENTION_HOURS).toBe(0);
    expect(loadConfig({ SANDBOX_RETENTION_HOURS: "0.5" }).SANDBOX_RETENTION_HOURS).toBe(0.5);
    expect(loadConfig({ SANDBOX_RETENTION_HOURS: "8760", SANDBOX_PIN_DAYS: "365" })).toMatchObject({ SANDBOX_RETENTION_HOURS: 8760, SANDBOX_PIN_DAYS: 365 });
    expect(loadConfig({ SANDBOX_PIN_DAYS: "1" }).SANDBOX_PIN_DAYS).toBe(1);
    const cases: Array<[NodeJS.ProcessEnv, string]> = [
      [{ SANDBOX_RETENTION_HOURS: "-1" }, "SANDBOX_RETENTION_HOURS: takes a number of hours ≥ 0 (0 = off)"],
      [{ SANDBOX_RETENTION_HOURS: "8761" }, "SANDBOX_RETENTION_HOURS: takes a number of hours ≤ 8760"],
      [{ SANDBOX_RETENTION_HOURS: "1e9" }, "SANDBOX_RETENTION_HOURS: takes a number of hours ≤ 8760"],
      [{ SANDBOX_RETENTION_HOURS: "Infinity" }, "SANDBOX_RETENTION_HOURS: takes a number of hours (0 = off)"],
      [{ SANDBOX_RETENTION_HOURS: "forever" }, "SANDBOX_RETENTION_HOURS: takes a number of hours (0 = off)"],
      [{ SANDBOX_PIN_DAYS: "0" }, "SANDBOX_PIN_DAYS: takes a number ≥ 1"],
      [{ SANDBOX_PIN_DAYS: "366" }, "SANDBOX_PIN_DAYS: takes a number ≤ 365"],
      [{ SANDBOX_PIN_DAYS: "1.5" }, "SANDBOX_PIN_DAYS: takes a whole number"],
      [{ SANDBOX_PIN_DAYS: "-1" }, "SANDBOX_PIN_DAYS: takes a number ≥ 1"],
      [{ SANDBOX_PIN_DAYS: "forever" }, "SANDBOX_PIN_DAYS: takes a whole number"],
    ];
    for (const [env, problem] of cases) expect(problemsOf(env), JSON.stringify(env)).toEqual([problem]);
  });
});
