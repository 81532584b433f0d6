// Env manifests name the variables a run needs; values are looked up in the worker's env only at run time.
import { readFile } from "node:fs/promises";
import { join } from "node:path";
import { formatIssues, parseWithWording } from "../../invalid-input.js";
import { EnvManifest } from "../contract.js";
import { EnvManifestError } from "../../errors.js";

export { EnvManifestError };

export async function readEnvManifest(dir: string, name: string): Promise<EnvManifest> {
  const path = join(dir, `${name}.json`);
  let raw: string;
  try {
    raw = await readFile(path, "utf8");
  } catch (err) {
    throw new EnvManifestError(`env manifest "${name}" not found at ${path} (${(err as NodeJS.ErrnoException).code ?? "unreadable"})`);
  }
  let json: unknown;
  try {
    json = JSON.parse(raw);
  } catch {
    throw new EnvManifestError(`env manifest ${path} is not valid JSON`);
  }
  const parsed = parseWithWording(EnvManifest, json);
  if (!parsed.success) throw new EnvManifestError(`env manifest ${path}: ${formatIssues(parsed.error)}`);
  return parsed.data;
}

/** Values for every manifest name, or the names that are missing (never a value in the error). */
export function resolveManifest(manifest: EnvManifest, env: NodeJS.ProcessEnv): { values: Record<string, string>; missing: string[] } {
  const values: Record<string, string> = {};
  const missing: string[] = [];
  for (const name of manifest.vars) {
    const value = env[name];
    if (value === undefined || value === "") missing.push(name);
    else values[name] = value;
  }
  return { values, missing };
}
