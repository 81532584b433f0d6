// docker-compose.yml and the Dockerfile, read as Compose and Docker would read them: valid Compose for `docker compose`
// (the Compose Specification's schema, as compose-go checks it), what podman-compose 1.0.3 needs, every setting
// reaching both services through the env file, nothing blanking one out, /data writable, init, health checks.
// The stack itself runs under podman-compose in test/integration/deployment/compose-stack.test.ts.
import { readFileSync } from "node:fs";
import { resolve } from "node:path";
import { describe, expect, it } from "vitest";
import { parse } from "yaml";
import { composeSpecProblems, InterpolationError, loadCompose } from "../../helpers/compose-file.js";
import { ENV_VARIABLES } from "../../../src/config.js";
import { ProjectsConfig } from "../../../src/margot/projects.js";
import { EnvManifest } from "../../../src/sandcastle/contract.js";
import { WORKERS_STOP_MARGIN_MS } from "../../../workers/index.js";

const root = resolve(import.meta.dirname, "../../..");
const read = (p: string) => readFileSync(resolve(root, p), "utf8");

interface Service {
  env_file?: string | Array<string | { path: string; required?: boolean }>;
  environment?: Record<string, string>;
  init?: boolean;
  volumes?: string[];
  command?: string[];
  healthcheck?: { test?: string[] };
  stop_grace_period?: string;
}
const compose = parse(read("docker-compose.yml"), { merge: true }) as { services: Record<string, Service> };
const apps = ["worker", "http"] as const;
/** What `cp .env.example .env` and the README's two settings give Compose. */
const envExample = Object.fromEntries(
  read(".env.example")
    .split("\n")
    .map((l) => /^([A-Z0-9_]+)=(.*)$/.exec(l))
    .filter((m): m is RegExpExecArray => m !== null)
    .map((m) => [m[1]!, m[2]!]),
);

describe("docker-compose.yml is Compose that both docker compose and podman-compose 1.0.3 read", () => {
  it("after interpolation with .env.example's settings and a token, it matches the Compose Specification's schema", () => {
    const compose = loadCompose({ ...envExample, SCQ_API_TOKEN: "admin-token-0123456789abcdef" });
    expect(composeSpecProblems(compose)).toEqual([]);
    // The defaults, for a host with a registry: the official Redis on the usual ports.
    const services = compose.services as Record<string, { image?: string; ports?: string[] }>;
    expect(services.redis!.image).toBe("redis:7-alpine");
    expect(services.redis!.ports).toEqual(["127.0.0.1:6379:6379"]);
    expect(services.http!.ports).toEqual(["127.0.0.1:3000:3000"]);
  });

  it("the offline images and other host ports come from .env, and still match the schema", () => {
    const compose = loadCompose({
      SCQ_API_TOKEN: "admin-token-0123456789abcdef",
      SCQ_REDIS_IMAGE: "localhost/sandcastle-queue-redis:7",
      SCQ_PUBLISH_REDIS_PORT: "16379",
      SCQ_PUBLISH_HTTP_PORT: "13000",
    });
    expect(composeSpecProblems(compose)).toEqual([]);
    const services = compose.services as Record<string, { image?: string; ports?: string[] }>;
    expect(services.redis!.image).toBe("localhost/sandcastle-queue-redis:7");
    expect(services.redis!.ports).toEqual(["127.0.0.1:16379:6379"]);
    expect(services.http!.ports).toEqual(["127.0.0.1:13000:3000"]);
    for (const name of apps) expect(services[name]!.image).toBe("localhost/sandcastle-queue:local");
  });

  it("the schema is a real check: the long env_file form passes it, a misspelt key does not", () => {
    const compose = loadCompose({ SCQ_API_TOKEN: "admin-token-0123456789abcdef" }) as { services: Record<string, Record<string, unknown>> };
    compose.services.worker!.env_file = [{ path: ".env", required: false }];
    expect(composeSpecProblems(compose)).toEqual([]);
    compose.services.worker!.stop_grace_periode = "60s";
    expect(composeSpecProblems(compose).join("\n")).toMatch(/\/services\/worker must NOT have additional properties/);
  });

  it("without SCQ_API_TOKEN, Compose stops with the message that says what to set", () => {
    expect(() => loadCompose({})).toThrow(InterpolationError);
    expect(() => loadCompose({})).toThrow(/SCQ_API_TOKEN is missing a value: set SCQ_API_TOKEN \(16\+ characters\) in \.env/);
  });

  it("what podman-compose 1.0.3 needs: env_file in the short form, health checks as CMD-SHELL, on every service", () => {
    for (const name of apps) expect(typeof compose.services[name]!.env_file, name).toBe("string");
    for (const name of ["redis", ...apps]) {
      // 1.0.3 turns a CMD list of several words into one word; CMD-SHELL with one string is passed through.
      expect(compose.services[name]!.healthcheck?.test?.[0], name).toBe("CMD-SHELL");
      expect(compose.services[name]!.healthcheck?.test, name).toHaveLength(2);
    }
    expect(compose.services.worker!.healthcheck!.test![1]).toMatch(/health --worker$/);
    expect(compose.services.http!.healthcheck!.test![1]).toMatch(/health --http$/);
  });
});

describe("docker-compose.yml", () => {
  it.each(apps)("%s reads every setting from .env, runs under init, and keeps its state in the writable /data volume", (name) => {
    const svc = compose.services[name]!;
    expect(svc.env_file).toBe(".env");
    expect(svc.init).toBe(true);
    expect(svc.volumes).toEqual(expect.arrayContaining(["scq-data:/data", "./config:/config:ro"]));
    expect(svc.environment?.SCQ_DATA_DIR).toBe("/data");
  });

  it.each(apps)("%s's environment never passes a setting through empty (which would override .env)", (name) => {
    const env = compose.services[name]!.environment ?? {};
    for (const [key, value] of Object.entries(env)) {
      // Only fixed values, and the one required token (interpolated from .env or the shell, or compose stops).
      if (key === "SCQ_API_TOKEN") expect(value).toMatch(/^\$\{SCQ_API_TOKEN:\?/);
      else expect(value, key).not.toMatch(/\$\{/);
    }
  });

  it("the worker gets SIGKILL only after the default grace and its own stop can have passed", () => {
    const seconds = Number(/^(\d+)s$/.exec(compose.services.worker!.stop_grace_period ?? "")?.[1]);
    expect(seconds).toBeGreaterThanOrEqual(30 + WORKERS_STOP_MARGIN_MS / 1000 + 10);
  });

  it("the webhook's service gets REVIEW_CHAT_ID and the review settings: nothing in http blanks them", () => {
    const env = compose.services.http!.environment ?? {};
    for (const key of ["REVIEW_CHAT_ID", "TELEGRAM_BOT_TOKEN", "TELEGRAM_WEBHOOK_SECRET", "TELEGRAM_REVIEWER_IDS", "LINEAR_TEAM_ID"])
      expect(env).not.toHaveProperty(key);
  });

  it(".env.example names every variable the program reads", () => {
    const names = new Set(read(".env.example").split("\n").map((l) => /^([A-Z0-9_]+)=/.exec(l)?.[1]).filter(Boolean));
    expect(ENV_VARIABLES.filter((v) => !names.has(v))).toEqual([]);
  });

  it("config/'s examples are valid files of their kind", () => {
    expect(ProjectsConfig.safeParse(JSON.parse(read("config/projects.example.json"))).success).toBe(true);
    expect(EnvManifest.safeParse(JSON.parse(read("config/env-manifests/example.json"))).success).toBe(true);
  });
});

describe("Dockerfile", () => {
  const lines = read("Dockerfile").split("\n");
  const final = lines.slice(lines.findLastIndex((l) => l.startsWith("FROM ")));

  it("has one recipe for two bases: the registry's Node image by default, any base by BASE, the app from either stage", () => {
    expect(lines).toContain("ARG BASE=node:24-bookworm-slim");
    expect(lines).toContain("ARG APP_FROM=build");
    expect(lines.filter((l) => l.startsWith("FROM "))).toEqual(["FROM ${BASE} AS build", "FROM ${BASE} AS context", "FROM ${APP_FROM} AS app", "FROM ${BASE}"]);
  });

  it("checks its health the way `start` runs: the health command, in the exec form", () => {
    expect(final.find((l) => l.startsWith("HEALTHCHECK "))).toMatch(/CMD \["node", "\/app\/dist\/src\/cli\/main\.js", "health"\]$/);
  });

  it(".dockerignore keeps the host's Node, modules, build output and secrets out of the build context", () => {
    const ignored = read(".dockerignore").split("\n");
    for (const entry of [".node", "node_modules", "dist", ".env", ".git", ".data"]) expect(ignored, entry).toContain(entry);
  });

  it("makes /data and gives it to the user the program runs as, before switching to that user", () => {
    const chown = final.findIndex((l) => /mkdir -p \/data && chown node:node \/data/.test(l));
    const user = final.findIndex((l) => /^USER node\b/.test(l));
    expect(chown).toBeGreaterThan(0);
    expect(user).toBeGreaterThan(chown);
    expect(final.join("\n")).toMatch(/SCQ_DATA_DIR=\/data/);
  });
});
