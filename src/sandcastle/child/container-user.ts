// Who the agent is inside a docker/podman container: the owner of the repository, never root (ADR 0009).
// The agent commits through the bind-mounted worktree and git dir, so its uid must be able to write them;
// the repository's owner can, and is the account an operator means agents to act as.
//
// When the child itself runs as root (a rootful engine) while the repository belongs to that user:
//  - the child's own git (and Sandcastle's, in this process) would refuse the repository ("dubious
//    ownership"), so this process trusts it by its exact paths (in its own env only, never the agent's);
//  - what root makes for the agent (its own repository) and adds to the host repository (the branch's
//    ref, reflog and objects) is handed back to the owner.
import { execFile, execFileSync } from "node:child_process";
import { statSync } from "node:fs";
import { promisify } from "node:util";
import type { ContainerUser } from "../containers/container-args.js";
import { join } from "node:path";
import { containerEngine, type SandboxField } from "../contract.js";
import { configEnv, NO_REPOSITORY_COMMANDS, trusting, type GitSetting } from "../hardened-git.js";
import { RunFailure } from "./run-failure.js";

const execFileAsync = promisify(execFile);
const uid = (): number | undefined => process.getuid?.();

/**
 * Before the child's first git call, for docker/podman runs: every git this process and Sandcastle start runs
 * no hook and no fsmonitor command (ADR 0033); a root child trusts a repository owned by someone else by its
 * exact paths. Returns the settings it put in this process's environment.
 */
export function hardenHostGit(repo: string, sandbox: SandboxField): GitSetting[] {
  const settings = hostGitSettings(repo, sandbox);
  if (settings.length > 0) Object.assign(process.env, configEnv(settings, process.env));
  return settings;
}

/** What hardenHostGit() sets, without setting it: for one git call of a process that must not keep them (a spare child). */
export function hostGitSettings(repo: string, sandbox: SandboxField): GitSetting[] {
  if (containerEngine(sandbox) === undefined) return [];
  const settings: GitSetting[] = [...NO_REPOSITORY_COMMANDS];
  let owner: number | undefined;
  try {
    owner = statSync(repo).uid;
  } catch {
    owner = undefined; // checkRepository reports a missing repo
  }
  if (uid() === 0 && owner !== undefined && owner !== 0) settings.push(...trusting([repo, join(repo, ".git")]));
  return settings;
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
    throw new RunFailure(
      "provider_unavailable",
      `sandbox "${engine}": ${commonDir} belongs to uid ${st.uid} but the worker runs as uid ${self}: run the worker as the repository's owner`,
    );
  }
  return { uid: st.uid, gid: st.gid };
}

/**
 * A root child hands what root created under `paths` back to the container's user. GNU chown's `--from=0`
 * changes only entries owned by root, `-h` symlinks themselves (never their targets), `-R` without
 * following links: one process, far cheaper than an lstat walk in Node over the same tree (ADR 0009).
 */
export async function handBack(paths: readonly string[], user: ContainerUser): Promise<void> {
  if (uid() !== 0 || user.uid === 0 || paths.length === 0) return;
  try {
    await execFileAsync("chown", chownArgs(paths, user), { timeout: 120_000 });
  } catch (error) {
    throw new Error(
      `could not give ${paths.join(", ")} back to ${user.uid}:${user.gid}: ${(error as { stderr?: string }).stderr?.trim() || (error as Error).message}`,
    );
  }
}

/** The same on an exit path: bounded, best effort. */
export function handBackSync(paths: readonly string[], user: ContainerUser): void {
  if (uid() !== 0 || user.uid === 0 || paths.length === 0) return;
  try {
    execFileSync("chown", chownArgs(paths, user), { stdio: "ignore", timeout: 10_000 });
  } catch {
    // what is left root's stays readable to its owner; the next run's hand-back takes it
  }
}

function chownArgs(paths: readonly string[], user: ContainerUser): string[] {
  return ["-R", "-h", "--from=0", `${user.uid}:${user.gid}`, "--", ...paths];
}
