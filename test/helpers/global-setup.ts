// One isolated Redis for the whole run unless REDIS_URL is given (or testcontainers with SCQ_TEST_REDIS=container).
// Each test then works under its own key prefix, so files can share the server.
import type { TestProject } from "vitest/node";
import { startRedisServer } from "./redis-server.js";

declare module "vitest" {
  export interface ProvidedContext {
    redisUrl: string;
  }
}

export default async function setup(project: TestProject): Promise<() => Promise<void>> {
  if (process.env.REDIS_URL) {
    project.provide("redisUrl", process.env.REDIS_URL);
    return async () => {};
  }
  if (process.env.SCQ_TEST_REDIS === "container") {
    const { RedisContainer } = await import("@testcontainers/redis");
    const container = await new RedisContainer("redis:7-alpine").withCommand(["redis-server", "--maxmemory-policy", "noeviction"]).start();
    project.provide("redisUrl", container.getConnectionUrl());
    return async () => {
      await container.stop();
    };
  }
  const redis = await startRedisServer();
  project.provide("redisUrl", redis.url);
  return () => redis.stop();
}
