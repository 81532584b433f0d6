// The podman CLI as the tests run it: with the engine settings this machine kind needs (CONTAINERS_CONF), no side effects
// at import (optional-tool.ts decides whether container tests run).
import { spawnSync } from "node:child_process";

/** The engine's settings the service would hand podman (CONTAINERS_CONF on this machine kind). */
export function engineEnv(): Record<string, string> {
  const env: Record<string, string> = {};
  for (const name of ["CONTAINERS_CONF", "CONTAINERS_STORAGE_CONF", "XDG_RUNTIME_DIR"]) if (process.env[name]) env[name] = process.env[name]!;
  return env;
}

export function podman(args: readonly string[], opts: { allowFail?: boolean } = {}): string {
  const out = spawnSync("podman", [...args], { encoding: "utf8", env: { ...process.env, ...engineEnv() }, timeout: 120_000 });
  if (out.status !== 0 && !opts.allowFail) throw new Error(`podman ${args.join(" ")} failed (${out.status}): ${out.stderr}`);
  return out.stdout;
}
