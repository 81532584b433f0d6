// The host repository (repo_workdir) as the child sees it through git.
import { execFile, execFileSync } from "node:child_process";
import { appendFile, mkdir, readFile } from "node:fs/promises";
import { isAbsolute, join, resolve } from "node:path";
import { promisify } from "node:util";
import { RunFailure } from "./run-failure.js";

const execFileAsync = promisify(execFile);

/** git in `repo`, in this process's env or in `env`. */
export async function git(repo: string, args: readonly string[], env?: NodeJS.ProcessEnv): Promise<string> {
  const { stdout } = await execFileAsync("git", [...args], { cwd: repo, maxBuffer: 64 * 1024 * 1024, ...(env !== undefined ? { env } : {}) });
  return stdout.trim();
}

/** For exit paths that cannot await: bounded so a wedged git cannot hold the child. */
export function gitSync(repo: string, args: readonly string[], timeoutMs = 2000): string {
  return execFileSync("git", [...args], {
    cwd: repo,
    timeout: timeoutMs,
    stdio: ["ignore", "pipe", "ignore"],
    maxBuffer: 64 * 1024 * 1024,
  })
    .toString("utf8")
    .trim();
}

/** The full sha a ref points at, or undefined when it does not resolve. */
export async function resolveCommit(repo: string, ref: string): Promise<string | undefined> {
  try {
    return await git(repo, ["rev-parse", "--verify", "--quiet", `${ref}^{commit}`]);
  } catch {
    return undefined;
  }
}

export function branchRef(branch: string): string {
  return `refs/heads/${branch}`;
}

/** What a run reads of repo_workdir before it starts. */
export interface RepositoryState {
  /** The absolute git common dir (shared by all worktrees of the repo). */
  readonly commonDir: string;
  /** HEAD's commit, and the branch it is on (null when detached). */
  readonly head: string;
  readonly headRef: string | null;
  /** The run's branch's commit, undefined when it does not exist yet. */
  readonly branchTip: string | undefined;
}

/**
 * repo_workdir must be a git work tree with at least one commit (Sandcastle branches from HEAD), and the run's branch
 * must not be its checked-out one. Read in two git processes at once (each is tens of ms on a small machine); only
 * when that read fails are the checks made one by one, for a message that says which failed.
 */
/** The repository's git common dir, absolute. */
export async function commonDirOf(repo: string, env?: NodeJS.ProcessEnv): Promise<string> {
  return absoluteIn(repo, await git(repo, ["rev-parse", "--git-common-dir"], env));
}

/** git prints the common dir relative to the repository unless it is elsewhere. */
function absoluteIn(repo: string, dir: string): string {
  return isAbsolute(dir) ? dir : resolve(repo, dir);
}

export async function checkRepository(repo: string, branch: string): Promise<RepositoryState> {
  const [probe, branchTip] = await Promise.all([
    git(repo, ["rev-parse", "--is-inside-work-tree", "--git-common-dir", "HEAD^{commit}", "--symbolic-full-name", "HEAD"]).catch(() => undefined),
    resolveCommit(repo, branchRef(branch)),
  ]);
  const [inside, commonDir, head, headRef] = probe?.split("\n") ?? [];
  if (inside !== "true" || commonDir === undefined || head === undefined || headRef === undefined) {
    await checkWorkTree(repo);
    throw new RunFailure("invalid_payload", `request.repo_workdir: ${repo} could not be read by git`);
  }
  if (headRef === branchRef(branch)) {
    throw new RunFailure(
      "invalid_payload",
      `request.branch: ${branch} is checked out in repo_workdir itself; the agent works on it in a separate worktree, so repo_workdir must be on another branch`,
    );
  }
  return { commonDir: absoluteIn(repo, commonDir), head, headRef: headRef === "HEAD" ? null : headRef, branchTip };
}

/** The checks one by one: throws the failure that names what is wrong with repo_workdir. */
async function checkWorkTree(repo: string): Promise<void> {
  let inside: string;
  try {
    inside = await git(repo, ["rev-parse", "--is-inside-work-tree"]);
  } catch {
    throw new RunFailure("invalid_payload", `request.repo_workdir: ${repo} is not a git work tree`);
  }
  if (inside !== "true") {
    throw new RunFailure("invalid_payload", `request.repo_workdir: ${repo} is not a git work tree`);
  }
  if ((await resolveCommit(repo, "HEAD")) === undefined) {
    throw new RunFailure("invalid_payload", `request.repo_workdir: ${repo} has no commit yet (Sandcastle branches from HEAD)`);
  }
}

export async function isAncestor(repo: string, ancestor: string, of: string): Promise<boolean> {
  try {
    await git(repo, ["merge-base", "--is-ancestor", ancestor, of]);
    return true;
  } catch {
    return false;
  }
}

export async function deleteBranch(repo: string, branch: string): Promise<boolean> {
  try {
    await git(repo, ["branch", "-D", branch]);
    return true;
  } catch {
    return false;
  }
}

const EXCLUDE_LINE = "/.sandcastle/";

/**
 * Sandcastle keeps worktrees and logs in <repo_workdir>/.sandcastle/. Lists it in the repo's local
 * (never committed) .git/info/exclude so it cannot end up in a commit made in repo_workdir.
 */
export async function excludeSandcastleDir(commonDir: string): Promise<void> {
  const file = join(commonDir, "info", "exclude");
  const current = await readFile(file, "utf8").catch(() => "");
  if (current.split("\n").some((line) => line.trim() === EXCLUDE_LINE)) return;
  await mkdir(join(commonDir, "info"), { recursive: true });
  const prefix = current.length > 0 && !current.endsWith("\n") ? "\n" : "";
  await appendFile(file, `${prefix}# sandcastle-queue: Sandcastle's worktrees and logs\n${EXCLUDE_LINE}\n`);
}
