// `sandbox: "custom:<name>"`: an operator's own Sandcastle sandbox provider, the module `<name>.js` or
// `<name>.mjs` in SANDCASTLE_PROVIDERS_DIR whose default export is a factory returning a provider made
// with createBindMountSandboxProvider or createIsolatedSandboxProvider (Sandcastle's provider API).
// The producer refuses an unknown name at enqueue; the child loads the module (child/custom-sandbox.ts).
import { existsSync, statSync } from "node:fs";
import { join } from "node:path";
import { PlainName } from "../contract.js";

export const PROVIDER_EXTENSIONS = [".js", ".mjs"] as const;

/** The module's path, or a sentence saying why there is none (no '/' or '..' can reach it: PlainName). */
export function findCustomProvider(dir: string | undefined | null, name: string): { path: string } | { problem: string } {
  if (!PlainName.safeParse(name).success) return { problem: `"${name}" is not a plain name` };
  if (dir === undefined || dir === null) return { problem: `custom sandbox providers need SANDCASTLE_PROVIDERS_DIR, which is not set` };
  for (const ext of PROVIDER_EXTENSIONS) {
    const path = join(dir, `${name}${ext}`);
    if (existsSync(path) && statSync(path).isFile()) return { path };
  }
  return { problem: `no provider "${name}" in ${dir} (looked for ${PROVIDER_EXTENSIONS.map((e) => `${name}${e}`).join(", ")})` };
}
