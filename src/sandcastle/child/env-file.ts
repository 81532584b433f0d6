// The secret env file of one container: `export NAME='value'` lines, 0400, owned by the container's user,
// inside the run's 0700 directory on tmpfs (removed with it). Mounted read-only into the container and
// sourced by the shell of every exec (container-args.ts withSecretEnv): the values reach the agent's
// environment without ever being on an argv or in the container's config (ADR 0008).
import { constants } from "node:fs";
import { chmod, open, rm } from "node:fs/promises";
import { join } from "node:path";
import type { ContainerUser } from "../containers/container-args.js";
import { shellQuote } from "../shell-quote.js";

const NAME = /^[A-Za-z_][A-Za-z0-9_]*$/;


export function envFileText(env: Readonly<Record<string, string>>): string {
  return Object.entries(env)
    .map(([name, value]) => {
      // Names come from zod-validated config; a bad one here would be shell syntax, so refuse it.
      if (!NAME.test(name)) throw new Error(`env file: ${JSON.stringify(name)} is not a variable name`);
      if (value.includes("\0")) throw new Error(`env file: the value of ${name} holds a NUL byte`);
      return `export ${name}=${shellQuote(value)}\n`;
    })
    .join("");
}

/** Creates `<dir>/<fileName>` exclusively (never through a planted file or symlink), 0400, owned by `owner`. */
export async function writeEnvFile(dir: string, fileName: string, env: Readonly<Record<string, string>>, owner: ContainerUser | undefined): Promise<string> {
  const path = join(dir, fileName);
  const fh = await open(path, constants.O_WRONLY | constants.O_CREAT | constants.O_EXCL | constants.O_NOFOLLOW, 0o400);
  try {
    await fh.writeFile(envFileText(env));
    // The container user reads it through the read-only mount; the 0700 directory keeps everyone else out.
    if (owner !== undefined && process.getuid?.() === 0) await fh.chown(owner.uid, owner.gid);
  } catch (error) {
    await fh.close();
    await rm(path, { force: true });
    throw error;
  }
  await fh.close();
  return path;
}

/**
 * Gives a file written before its values were known (an early container's, ADR 0052) those values, in place: the
 * container's mount holds this file, not its name. It is 0400 again before any command can read it.
 */
export async function fillEnvFile(path: string, env: Readonly<Record<string, string>>): Promise<void> {
  const text = envFileText(env);
  await chmod(path, 0o600);
  const fh = await open(path, constants.O_WRONLY | constants.O_TRUNC | constants.O_NOFOLLOW);
  try {
    await fh.writeFile(text);
  } finally {
    await fh.close();
  }
  await chmod(path, 0o400);
}

export async function removeEnvFile(path: string): Promise<void> {
  await rm(path, { force: true });
}
