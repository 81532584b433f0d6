// docker-compose.yml read as `docker compose` reads it: YAML with its merge keys resolved, then `${…}` interpolated
// from an environment in every string (compose-go's forms: ${V}, ${V:-default}, ${V-default}, ${V:?error},
// ${V?error}, $V, $$), then checked against the Compose Specification's schema (test/fixtures/compose-spec/).
import { readFileSync } from "node:fs";
import { resolve } from "node:path";
import type { ValidateFunction } from "ajv";
import Ajv2020Module from "ajv/dist/2020.js";
import { parse } from "yaml";

const ROOT = resolve(import.meta.dirname, "../..");
export const COMPOSE_FILE = resolve(ROOT, "docker-compose.yml");

export class InterpolationError extends Error {}

const VARIABLE = /\$(?:(\$)|([A-Za-z_][A-Za-z0-9_]*)|\{([A-Za-z_][A-Za-z0-9_]*)(?:(:?)([-?])([^}]*))?\})/g;

function interpolateString(text: string, env: Record<string, string | undefined>): string {
  return text.replace(VARIABLE, (_m, dollar?: string, bare?: string, name?: string, colon?: string, op?: string, arg?: string) => {
    if (dollar) return "$";
    const key = (bare ?? name)!;
    const value = env[key];
    const missing = value === undefined || (colon === ":" && value === "");
    if (!missing) return value;
    if (op === "?") throw new InterpolationError(`required variable ${key} is missing a value: ${arg}`);
    if (op === "-") return arg ?? "";
    return "";
  });
}

export function interpolate(value: unknown, env: Record<string, string | undefined>): unknown {
  if (typeof value === "string") return interpolateString(value, env);
  if (Array.isArray(value)) return value.map((v) => interpolate(v, env));
  if (value !== null && typeof value === "object") return Object.fromEntries(Object.entries(value).map(([k, v]) => [k, interpolate(v, env)]));
  return value;
}

/** The compose file as Compose sees it with this environment (the project's .env and the shell). */
export function loadCompose(env: Record<string, string | undefined>, text = readFileSync(COMPOSE_FILE, "utf8")): Record<string, unknown> {
  return interpolate(parse(text, { merge: true }), env) as Record<string, unknown>;
}

let validator: ValidateFunction | undefined;

/** The schema's complaints about a loaded compose file, as "<path> <message>" lines; [] when valid. */
export function composeSpecProblems(compose: Record<string, unknown>): string[] {
  if (!validator) {
    const schema = JSON.parse(readFileSync(resolve(ROOT, "test/fixtures/compose-spec/compose-spec.json"), "utf8")) as object;
    // ajv is CommonJS: its class is the module's default export.
    const Ajv2020 = (Ajv2020Module as unknown as { default: typeof Ajv2020Module.default }).default;
    validator = new Ajv2020({ allErrors: true, strict: false }).compile(schema);
  }
  return validator(compose) ? [] : (validator.errors ?? []).map((e) => `${e.instancePath || "(top level)"} ${e.message ?? ""}`);
}
