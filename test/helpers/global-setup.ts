// One isolated Redis for the whole run unless REDIS_URL is given, or SCQ_TEST_REDIS=container: a Redis started by
// testcontainers on a Docker-compatible engine (DOCKER_HOST; podman's, by scripts/test-with-testcontainers.sh).
// Each test then works under its own key prefix, so files can share the server.
import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import type { TestProject } from "vitest/node";
import { startRedisServer } from "./redis-server.js";

declare module "vitest" {
  export interface ProvidedContext {
    redisUrl: string;
  }
}

/** Its containers carry this label with the value of SCQ_TEST_CONTAINER_LABEL: what a sweep after the run removes. */
export const TEST_RUN_LABEL = "io.sandcastle-queue.test-run";

export default async function setup(project: TestProject): Promise<() => Promise<void>> {
  // Where each test process's CLIs keep their state (cli.ts): never the real user's; the test processes inherit it.
  const stateRoot = mkdtempSync(join(tmpdir(), "scq-state-"));
  process.env.SCQ_TEST_STATE_ROOT = stateRoot;
  const teardown = await redisFor(project);
  return async () => {
    await teardown();
    rmSync(stateRoot, { recursive: true, force: true });
  };
}

async function redisFor(project: TestProject): Promise<() => Promise<void>> {
  const mode = process.env.SCQ_TEST_REDIS;
  if (mode !== undefined && mode !== "" && mode !== "container") {
    throw new Error(
      `SCQ_TEST_REDIS=${mode} is not a mode: set it to "container" (a Redis started by testcontainers) or leave it unset (a redis-server of the run's own)`,
    );
  }
  if (process.env.REDIS_URL) {
    project.provide("redisUrl", process.env.REDIS_URL);
    return async () => {};
  }
  if (mode === "container") {
    const { RedisContainer } = await import("@testcontainers/redis");
    // The official image by default; on a machine without a registry, the one scripts/build-service-images.sh builds.
    const image = process.env.SCQ_TEST_REDIS_IMAGE || "redis:7-alpine";
    // Protected mode off: Debian's redis-server has it on, and the tests connect through the engine's port mapping.
    let request = new RedisContainer(image).withCommand(["redis-server", "--protected-mode", "no", "--maxmemory-policy", "noeviction"]);
    if (process.env.SCQ_TEST_CONTAINER_LABEL) request = request.withLabels({ [TEST_RUN_LABEL]: process.env.SCQ_TEST_CONTAINER_LABEL });
    const container = await request.start().catch((err: Error) => {
      throw new Error(
        `SCQ_TEST_REDIS=container: testcontainers could not start ${image} (${err.message}); it needs a Docker-compatible engine at DOCKER_HOST (podman: scripts/test-with-testcontainers.sh)`,
      );
    });
    project.provide("redisUrl", container.getConnectionUrl());
    console.log(`tests use ${image} in container ${container.getId().slice(0, 12)} at ${container.getConnectionUrl()} (testcontainers)`);
    return async () => {
      await container.stop();
    };
  }
  const redis = await startRedisServer();
  project.provide("redisUrl", redis.url);
  return () => redis.stop();
}
