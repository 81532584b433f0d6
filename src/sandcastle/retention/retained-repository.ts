// The repository of a retained workspace (run-retention.ts): made by the host's git from the host repository, holding
// the run's commits, the commit(s) they start from as a shallow boundary, every tree of those, and only the blobs the
// run made or a diff of its work reads (its commits' before and after, the paths its agent left changed). The other
// blobs of the checkout are the workspace's files themselves, promised by the host repository: the workspace is a
// partial clone of it, so it costs its files once and the run's own objects whatever the repository's history, and
// without the repository `git log`, `git log -p`, `git status` and `git diff` still work. While it is made, the host's
// objects are borrowed (alternates); the pack is written and the borrowing ended before keep() returns.
import { execFile } from "node:child_process";
import { writeFile, rm, mkdir } from "node:fs/promises";
import { isAbsolute, join } from "node:path";
import { promisify } from "node:util";
import { configArgs, NO_REPOSITORY_COMMANDS, trusting } from "../hardened-git.js";

const execFileAsync = promisify(execFile);
const GIT_TIMEOUT_MS = 600_000;
const MAX_BUFFER = 256 * 2 ** 20;
const NULL_OID = /^0+$/;
/** A submodule's entry names a commit of another repository: never an object of this one. */
const GITLINK_MODE = "160000";

/** The host repository, trusted by its exact paths (a root worker reads repositories other users own). */
function trustedRepo(repo: string) {
  return [...NO_REPOSITORY_COMMANDS, ...trusting([repo, join(repo, ".git")])];
}

/** git in the host repository. */
export function repoGit(repo: string, args: readonly string[]): Promise<{ stdout: string }> {
  return execFileAsync("git", [...configArgs(trustedRepo(repo)), ...args], { cwd: repo, maxBuffer: MAX_BUFFER, timeout: GIT_TIMEOUT_MS });
}

/** git in the retained workspace: its git dir named, never discovered, so no file of the agent's is taken for one. */
function workspaceGit(workspace: string, args: readonly string[], input?: string): Promise<string> {
  const argv = [...configArgs(NO_REPOSITORY_COMMANDS), `--git-dir=${join(workspace, ".git")}`, `--work-tree=${workspace}`, ...args];
  return new Promise((resolve, reject) => {
    const child = execFile("git", argv, { cwd: workspace, maxBuffer: MAX_BUFFER, timeout: GIT_TIMEOUT_MS }, (error, stdout) =>
      error ? reject(error) : resolve(stdout),
    );
    // A git that reads no stdin may exit before taking it: not an error of the command's.
    child.stdin?.on("error", () => {});
    child.stdin?.end(input === undefined || input.endsWith("\n") ? (input ?? "") : `${input}\n`);
  });
}

const lines = (text: string) => text.split("\n").filter((l) => l.length > 0);

/** The object ids in `git diff-tree`/`diff-files --raw` output that are blobs of this repository. */
function rawBlobs(raw: string): string[] {
  const blobs: string[] = [];
  for (const line of lines(raw)) {
    if (!line.startsWith(":")) continue;
    const [modeA, modeB, oidA, oidB] = line.slice(1).split("\t")[0]!.split(" ");
    if (modeA !== GITLINK_MODE && oidA !== undefined && !NULL_OID.test(oidA)) blobs.push(oidA);
    if (modeB !== GITLINK_MODE && oidB !== undefined && !NULL_OID.test(oidB)) blobs.push(oidB);
  }
  return blobs;
}

export interface RetainedRepositoryInput {
  readonly workspace: string;
  /** The host repository (its work tree). */
  readonly repo: string;
  readonly branch: string;
  /** The branch's tip in the host repository. */
  readonly tip: string;
  /** The run's commits as its result lists them; an incomplete list (a lost run: none) keeps only the tip. */
  readonly commits: readonly string[];
  /** The agent's files are in the workspace already: the index is set to the branch; else the branch is checked out. */
  readonly filesInPlace: boolean;
}

/** Makes `<workspace>/.git` (the workspace exists); returns the shallow boundary it kept. */
export async function makeRetainedRepository(input: RetainedRepositoryInput): Promise<string[]> {
  const { workspace, repo, branch, tip } = input;
  const git = (args: readonly string[], stdin?: string) => workspaceGit(workspace, args, stdin);
  const commonDir = (await repoGit(repo, ["rev-parse", "--git-common-dir"])).stdout.trim();
  const hostObjects = join(isAbsolute(commonDir) ? commonDir : join(repo, commonDir), "objects");
  await git(["init", "--quiet", "--template="]);
  const alternates = join(workspace, ".git", "objects", "info", "alternates");
  await mkdir(join(workspace, ".git", "objects", "info"), { recursive: true });
  await writeFile(alternates, `${hostObjects}\n`);
  try {
    await git(["-c", "core.logAllRefUpdates=false", "update-ref", `refs/heads/${branch}`, tip]);
    await git(["symbolic-ref", "HEAD", `refs/heads/${branch}`]);
    // With the agent's files there, the index is set to the branch so `git status` shows their changes; else the branch is checked out.
    await git(input.filesInPlace ? ["reset", "--quiet"] : ["read-tree", "-u", "--reset", "HEAD"]);

    const { own, boundary } = await runCommits(git, tip, input.commits);
    const trees = lines(await git(["rev-list", "--objects", "--no-walk", "--filter=blob:none", "--stdin"], [...own, ...boundary].join("\n"))).map(
      (l) => l.split(" ")[0]!,
    );
    const diffed = own.length > 0 ? rawBlobs(await git(["diff-tree", "-r", "-m", "--no-renames", "--no-commit-id", "--stdin"], own.join("\n"))) : [];
    const changedByAgent = rawBlobs(await git(["diff-files", "--raw", "--no-renames"]));
    const objects = [...new Set([...trees, ...diffed, ...changedByAgent])];
    const packDir = join(workspace, ".git", "objects", "pack");
    const packHash = (await git(["pack-objects", "--quiet", join(packDir, "pack")], objects.join("\n"))).trim();
    // The pack's missing blobs are promised by the host repository (a partial clone's promisor pack).
    await writeFile(join(packDir, `pack-${packHash}.promisor`), "");
    if (boundary.length > 0) await writeFile(join(workspace, ".git", "shallow"), `${boundary.join("\n")}\n`);
    // A partial clone of the host repository: one config file, written whole (git init made it; nothing else has).
    await writeFile(join(workspace, ".git", "config"), partialCloneConfig(repo));
    return boundary;
  } finally {
    await rm(alternates, { force: true });
  }
}

/** `git config`'s own quoting: a value in double quotes, its backslashes, quotes and line breaks escaped. */
const quoted = (value: string) => `"${value.replace(/\\/g, "\\\\").replace(/"/g, '\\"').replace(/\n/g, "\\n")}"`;

function partialCloneConfig(repo: string): string {
  return [
    "[core]", "\trepositoryformatversion = 1", "\tfilemode = true", "\tbare = false", "[extensions]", "\tpartialClone = origin", '[remote "origin"]',
    `\turl = ${quoted(repo)}`,
    "\tpromisor = true",
    "\tpartialCloneFilter = blob:none",
    "",
  ].join("\n");
}

/**
 * The run's own commits and the commits they start from. The result's list is used when it is exactly what lies
 * between the tip and its parents outside the list (a shallow history with no gap); else only the tip is kept.
 */
async function runCommits(
  git: (args: readonly string[], stdin?: string) => Promise<string>,
  tip: string,
  listed: readonly string[],
): Promise<{ own: string[]; boundary: string[] }> {
  const own = new Set(listed);
  if (!own.has(tip)) return { own: [], boundary: [tip] };
  const parents = lines(await git(["rev-list", "--no-walk", "--parents", "--stdin"], [...own].join("\n"))).flatMap((l) => l.split(" ").slice(1));
  const boundary = [...new Set(parents.filter((p) => !own.has(p)))];
  const between = lines(await git(["rev-list", "--stdin"], [tip, ...boundary.map((b) => `^${b}`)].join("\n")));
  if (between.length !== own.size || between.some((c) => !own.has(c))) return { own: [], boundary: [tip] };
  // A root commit of the run has no parent: nothing before it to cut.
  return { own: [...own], boundary };
}
