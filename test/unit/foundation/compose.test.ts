// docker-compose.yml and the Dockerfile, read as Compose and Docker would read them (no Docker engine here):
// every setting reaches both services through the env file, nothing blanks one out, /data is writable, init.
import { readFileSync } from "node:fs";
import { resolve } from "node:path";
import { describe, expect, it } from "vitest";
import { parse } from "yaml";
import { ENV_VARIABLES } from "../../../src/config.js";
import { ProjectsConfig } from "../../../src/margot/projects.js";
import { EnvManifest } from "../../../src/sandcastle/contract.js";

const root = resolve(import.meta.dirname, "../../..");
const read = (p: string) => readFileSync(resolve(root, p), "utf8");

interface Service {
  env_file?: Array<string | { path: string; required?: boolean }>;
  environment?: Record<string, string>;
  init?: boolean;
  volumes?: string[];
  command?: string[];
}
const compose = parse(read("docker-compose.yml"), { merge: true }) as { services: Record<string, Service> };
const apps = ["worker", "http"] as const;

describe("docker-compose.yml", () => {
  it.each(apps)("%s reads every setting from .env, runs under init, and keeps its state in the writable /data volume", (name) => {
    const svc = compose.services[name]!;
    expect(svc.env_file?.map((f) => (typeof f === "string" ? f : f.path))).toEqual([".env"]);
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

  it("the webhook's service gets REVIEW_CHAT_ID and the review settings: nothing in http blanks them", () => {
    const env = compose.services.http!.environment ?? {};
    for (const key of ["REVIEW_CHAT_ID", "TELEGRAM_BOT_TOKEN", "TELEGRAM_WEBHOOK_SECRET", "TELEGRAM_REVIEWER_IDS", "LINEAR_TEAM_ID"]) expect(env).not.toHaveProperty(key);
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
  it("makes /data and gives it to the user the program runs as, before switching to that user", () => {
    const lines = read("Dockerfile").split("\n");
    const final = lines.slice(lines.findLastIndex((l) => l.startsWith("FROM ")));
    const chown = final.findIndex((l) => /mkdir -p \/data && chown node:node \/data/.test(l));
    const user = final.findIndex((l) => /^USER node\b/.test(l));
    expect(chown).toBeGreaterThan(0);
    expect(user).toBeGreaterThan(chown);
    expect(final.join("\n")).toMatch(/SCQ_DATA_DIR=\/data/);
  });
});
