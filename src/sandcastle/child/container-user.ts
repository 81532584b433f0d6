// Who the agent is inside a docker/podman container: the owner of the repository, never root (ADR 0009).
// The agent commits through the bind-mounted worktree and git dir, so its uid must be able to write them;
// the repository's owner can, and is the account an operator means agents to act as.
//
// When the child itself runs as root (a rootful engine) while the repository belongs to that user:
//  - the child's own git (and Sandcastle's, in this process) would refuse the repository ("dubious
//    ownership"), so this process trusts it (safe.directory, in its own env only, never the agent's);
//  - what root's git creates in it (the worktree, its admin dir, the branch's ref and reflog) is handed
//    back to the owner before each container starts, or the agent could not write it.
import { execFile } from "node:child_process";
import { statSync } from "node:fs";
import { promisify } from "node:util";
import type { ContainerUser } from "../container-args.js";
import { containerEngine, type SandboxField } from "../contract.js";
import { RunFailure } from "./run-failure.js";

const execFileAsync = promisify(execFile);
const uid = (): number | undefined => process.getuid?.();

/**
 * Before the child's first git call: a root child about to run containers in a repository owned by
 * someone else trusts it for this process's git processes only. Returns whether it did.
 */
export function trustRepositoryOwner(repo: string, sandbox: SandboxField): boolean {
  if (containerEngine(sandbox) === undefined || uid() !== 0) return false;
  let owner: number;
  try {
    owner = statSync(repo).uid;
  } catch {
    return false; // checkRepository reports a missing repo
  }
  if (owner === 0) return false;
  process.env.GIT_CONFIG_COUNT = "1";
  process.env.GIT_CONFIG_KEY_0 = "safe.directory";
  process.env.GIT_CONFIG_VALUE_0 = "*";
  return true;
}

/** The container's user: the owner of the repository's git common dir. */
export function repositoryUser(commonDir: string, engine: string): ContainerUser {
  const st = statSync(commonDir);
  if (st.uid === 0) {
    throw new RunFailure(
      "provider_unavailable",
      `sandbox "${engine}" runs the agent as the repository's owner, never root, and ${commonDir} is owned by root: give the repository to the account agents act as (chown -R 1000:1000 <repo_workdir>)`,
    );
  }
  const self = uid();
  if (self !== undefined && self !== 0 && self !== st.uid) {
    throw new RunFailure("provider_unavailable", `sandbox "${engine}": ${commonDir} belongs to uid ${st.uid} but the worker runs as uid ${self}: run the worker as the repository's owner`);
  }
  return { uid: st.uid, gid: st.gid };
}

/**
 * A root child hands what root created under `paths` back to the container's user. GNU chown's `--from=0`
 * changes only entries owned by root, `-h` symlinks themselves (never their targets), `-R` without
 * following links: one process, ~0.13 s for 13,000 entries where an lstat walk in Node took ~2 s.
 */
export async function handBack(paths: readonly string[], user: ContainerUser): Promise<void> {
  if (uid() !== 0 || user.uid === 0 || paths.length === 0) return;
  try {
    await execFileAsync("chown", ["-R", "-h", "--from=0", `${user.uid}:${user.gid}`, "--", ...paths], { timeout: 120_000 });
  } catch (error) {
    throw new Error(`could not give ${paths.join(", ")} back to ${user.uid}:${user.gid}: ${(error as { stderr?: string }).stderr?.trim() || (error as Error).message}`);
  }
}
