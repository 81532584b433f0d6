// The package's own package.json, read through its export: the version `--version` prints and the Node it needs
// (`engines.node`). Loads nothing but node:module, so the oldest Node can read it (main.ts asks it first).
import { createRequire } from "node:module";

export interface PackageInfo {
  readonly version: string;
  readonly engines: { readonly node: string };
}

export const PACKAGE = createRequire(import.meta.url)("sandcastle-queue/package.json") as PackageInfo;
