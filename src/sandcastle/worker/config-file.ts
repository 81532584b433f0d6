// The child's config file, inside the run's 0700 directory on tmpfs (run-dir.ts): the one channel for
// secret values. 0600, created exclusively; it goes when the run directory goes.
import { constants } from "node:fs";
import { open } from "node:fs/promises";
import { join } from "node:path";
import type { ChildConfig } from "../contract.js";

export const CONFIG_FILE_NAME = "config.json";

export async function writeChildConfig(runDir: string, config: ChildConfig): Promise<string> {
  const path = join(runDir, CONFIG_FILE_NAME);
  // O_EXCL: never write into a file someone else prepared (or a symlink they planted).
  const fh = await open(path, constants.O_WRONLY | constants.O_CREAT | constants.O_EXCL | constants.O_NOFOLLOW, 0o600);
  try {
    await fh.writeFile(JSON.stringify(config));
  } finally {
    await fh.close();
  }
  return path;
}
