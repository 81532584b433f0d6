// The compose stack as an operator runs it without Docker or an image registry: docker-compose.yml, unchanged, under
// Debian's podman-compose 1.0.3 on real podman, with the images scripts/build-service-images.sh builds from Debian's
// packages and the npm registry. Up; healthy by each service's own check; a dry run enqueued over HTTP with the admin
// token, its SSE log read to `end` and its result read; stopped gracefully; nothing left but the volumes, until asked.
import { readFileSync } from "node:fs";
import { join, resolve } from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { ComposeStack, REDIS_IMAGE, SERVICE_IMAGE, skipCompose } from "../../helpers/compose-stack.js";
import { COMPOSE_FILE } from "../../helpers/compose-file.js";
import { podman } from "../../helpers/podman.js";
import { freePort } from "../../helpers/redis-server.js";
import { SseReader } from "../../helpers/sse-reader.js";
import { serviceLine } from "../../../src/session-log/service-lines.js";

const COMMIT_FILE = resolve(import.meta.dirname, "../../fixtures/sandcastle/commit-file");
const ADMIN = "compose-admin-token-0123456789";
const VIEWER = "compose-viewer-token-0123456789";
const SERVICES = ["redis", "worker", "http"];

describe.skipIf(skipCompose)("docker-compose.yml under podman-compose, for real", { timeout: 300_000 }, () => {
  let stack: ComposeStack;
  let base: string;

  beforeAll(async () => {
    const httpPort = await freePort();
    stack = new ComposeStack({
      SCQ_API_TOKEN: ADMIN,
      SCQ_VIEWER_TOKEN: VIEWER,
      TAO_SANDCASTLE_ENABLED: "1",
      SCQ_REDIS_IMAGE: REDIS_IMAGE,
      SCQ_PUBLISH_REDIS_PORT: String(await freePort()),
      SCQ_PUBLISH_HTTP_PORT: String(httpPort),
    });
    stack.writeConfig("env-manifests/proj.json", JSON.stringify({ project_slug: "proj", vars: [] }));
    base = `http://127.0.0.1:${httpPort}`;
  });

  afterAll(() => stack?.removeAll());

  it("the project's file is the repository's docker-compose.yml, byte for byte", () => {
    expect(readFileSync(join(stack.dir.path, "docker-compose.yml"), "utf8")).toBe(readFileSync(COMPOSE_FILE, "utf8"));
  });

  it("the service image carries the Dockerfile's HEALTHCHECK (built in the docker format) and its recipe", () => {
    // podman shows the docker format's health check beside the OCI config, not in it.
    const healthcheck = JSON.parse(podman(["image", "inspect", "--format", "{{json .Config.Healthcheck}}", SERVICE_IMAGE])) as { Test?: string[] } | null;
    expect(healthcheck?.Test).toEqual(["CMD", "node", "/app/dist/src/cli/main.js", "health"]);
    const config = JSON.parse(podman(["image", "inspect", "--format", "{{json .Config}}", SERVICE_IMAGE])) as {
      User?: string;
      Labels?: Record<string, string>;
    };
    expect(config.User).toBe("node");
    expect(config.Labels?.["io.sandcastle-queue.recipe"]).toMatch(/^[0-9a-f]{16}$/);
  });

  it("comes up: Redis, the worker and the HTTP server, each healthy by its own check", async () => {
    const up = stack.compose(["up", "-d"]);
    expect(up.code, up.output).toBe(0);
    expect(stack.containers().sort()).toEqual(SERVICES.map((s) => stack.container(s)).sort());
    for (const service of SERVICES) await stack.waitHealthy(service, 120_000);
    for (const service of SERVICES)
      expect(podman(["inspect", "--format", "{{.State.Health.Status}}", stack.container(service)]).trim(), service).toBe("healthy");
    // The worker's check found this container's own workers, by its host name (the container's id).
    const check = JSON.parse(podman(["inspect", "--format", "{{json .State.Health.Log}}", stack.container("worker")])) as Array<{ Output: string }>;
    expect(check.at(-1)!.Output).toMatch(/^healthy: workers of [0-9a-f]{12} on sandcastle-run, margot-intent, sandbox-retention/);
    // Redis keeps its AOF with an fsync per write in its volume, and never evicts.
    const redisConfig =
      podman(["exec", stack.container("redis"), "redis-cli", "config", "get", "appendfsync"]) +
      podman(["exec", stack.container("redis"), "redis-cli", "config", "get", "maxmemory-policy"]);
    expect(redisConfig.split("\n").filter(Boolean)).toEqual(["appendfsync", "always", "maxmemory-policy", "noeviction"]);
  });

  it("runs a dry run enqueued over HTTP with the admin token: its live log to `end`, then its result", async () => {
    // What the worker's run needs, made inside the stack: a repository and the smoke-test agent in the /data volume.
    const worker = stack.container("worker");
    podman(["cp", COMMIT_FILE, `${worker}:/data/prompt`]);
    podman([
      "exec", worker, "sh", "-c",
      "git init -q -b main /data/repo && cd /data/repo && git config user.email t@example.com && git config user.name t && echo repo > README.md && git add . && git commit -qm init",
    ]);
    const request = {
      session_id: "compose-1",
      agent: "script",
      sandbox: "noSandbox",
      dry_run: true,
      prompt_template_dir: "/data/prompt",
      branch: "agent/compose-1",
      repo_workdir: "/data/repo",
      env_manifest_name: "proj",
      timeout_minutes: 2,
    };
    const post = (token?: string) =>
      fetch(`${base}/v1/sandcastle-runs`, {
        method: "POST",
        headers: { "content-type": "application/json", ...(token ? { authorization: `Bearer ${token}` } : {}) },
        body: JSON.stringify(request),
      });

    // Bound to 0.0.0.0 in its container, the server takes no write without the admin token.
    expect((await post()).status).toBe(401);
    expect((await post(VIEWER)).status).toBe(403);
    const created = await post(ADMIN);
    expect(created.status).toBe(201);
    const envelope = (await created.json()) as { run_id: string; links: { job: string; logs: string } };
    expect(created.headers.get("location")).toBe(envelope.links.job);

    const log = new SseReader(`${base}${envelope.links.logs}`, VIEWER);
    try {
      await log.waitForEnd(120_000);
    } finally {
      log.close();
    }
    // The service's own lines as stored and served: behind their mark (ADR 0045); the agent's as it wrote them.
    const started = serviceLine("── run started on agent/compose-1");
    const expected = [started, "WRITE: hello-compose-1.txt", "committed hello-compose-1.txt", serviceLine("── run ok")];
    expect(log.lines()).toEqual(expect.arrayContaining(expected));
    expect(log.events.filter((e) => e.type.startsWith("run-")).map((e) => e.type)).toEqual(["run-queued", "run-started", "run-ended"]);
    expect(JSON.parse(log.events.find((e) => e.type === "run-ended")!.data)).toMatchObject({ run_id: envelope.run_id, status: "ok" });

    // Read at once after `end`: the result is there.
    const job = (await (await fetch(`${base}${envelope.links.job}`, { headers: { authorization: `Bearer ${VIEWER}` } })).json()) as {
      state: string;
      result: { status: string; branch: string; commits: Array<{ sha: string }>; audit_row_count: number };
    };
    expect(job.state).toBe("completed");
    expect(job.result).toMatchObject({ status: "ok", branch: "agent/compose-1" });
    expect(job.result.commits).toHaveLength(1);
    // In the repository in the volume: the branch holds the agent's commit.
    expect(podman(["exec", worker, "git", "-C", "/data/repo", "rev-parse", "agent/compose-1"]).trim()).toBe(job.result.commits[0]!.sha);
    expect(podman(["exec", worker, "git", "-C", "/data/repo", "show", "--name-only", "--format=", "agent/compose-1"]).trim()).toBe("hello-compose-1.txt");
    // The audit rows went to the pinned AUDIT_LOG_PATH in the volume.
    const audit = podman(["exec", worker, "cat", "/data/harness/swarm.jsonl"]).split("\n").filter(Boolean).map((l) => (JSON.parse(l) as { type: string }).type);
    expect(audit).toEqual(["sandcastle_env_resolved", "sandcastle_run_started", "sandcastle_run_ok"]);
  });

  it("stops gracefully, and leaves nothing but its volumes; `down -v` removes those too", () => {
    // podman-compose 1.0.3 ignores stop_grace_period (its own default is 1 s): the README says to give -t.
    const stop = stack.compose(["stop", "-t", "60"]);
    expect(stop.code, stop.output).toBe(0);
    // SIGTERM through init reached the program, which shut down within the grace and exited 0.
    for (const service of ["worker", "http"])
      expect(podman(["inspect", "--format", "{{.State.ExitCode}}", stack.container(service)]).trim(), service).toBe("0");
    const down = stack.compose(["down", "-t", "60"]);
    expect(down.code, down.output).toBe(0);
    expect(stack.containers()).toEqual([]);
    // podman-compose 1.0.3's down leaves the project's network: the README's stop step removes it.
    for (const network of stack.networks()) {
      expect(network).toBe(`${stack.project}_default`);
      podman(["network", "rm", network]);
    }
    expect(stack.networks()).toEqual([]);
    expect(stack.volumes().sort()).toEqual([`${stack.project}_redis-data`, `${stack.project}_scq-data`]);

    const purge = stack.compose(["down", "-v"]);
    expect(purge.code, purge.output).toBe(0);
    expect(stack.volumes()).toEqual([]);
    expect(stack.containers()).toEqual([]);
  });
});
