// The agent's own repository (ADR 0033): for a container run, each agent phase works in a standalone
// repository the child makes for it on the host, never in the host repository's git dir. The container
// gets it read-write and the host's object store read-only (the repository borrows its objects through
// `objects/info/alternates`), so nothing the agent writes — config, hooks, refs, `info/`, objects — is
// ever read by a git on the host. The branch comes back as data: branch-handoff.ts, branch-intake.ts.
//
// Made before the agent starts, by the host's git, so everything in it is ours at that moment:
//   .git/            `git init --template=` (no hooks, no info/), HEAD on the run's branch,
//                    packed-refs = the host's branches, tags and remote-tracking refs as they are now,
//                    alternates = the host's object directory, `shallow` copied when the host is shallow
//   work tree        the branch checked out (`read-tree -u`), then the whole tree given to the agent's user
import { constants } from "node:fs";
import { copyFile, mkdir, open, readFile, realpath, writeFile } from "node:fs/promises";
import { isAbsolute, join, resolve } from "node:path";
import type { ContainerUser } from "../containers/container-args.js";
import { handBack } from "./container-user.js";
import { branchRef, git } from "./repository.js";
import { RunFailure } from "./run-failure.js";

/** Which of the host's refs the agent's repository starts with: what an agent may read, diff or merge. */
const SHARED_REFS = ["refs/heads", "refs/tags", "refs/remotes"] as const;

export interface AgentRepository {
  /** The repository on the host (the container's worktree mount). */
  readonly dir: string;
  readonly branch: string;
  /** What the branch pointed at in the host repository when the agent's repository was made. */
  readonly base: string;
  /** Every ref the agent's repository was given, name → object id: what the agent may not change. */
  readonly refs: ReadonlyMap<string, string>;
  /** `.git/config` as it was written. */
  readonly config: string;
  /** The host's object directories the container reads (read-only mounts at their host paths). */
  readonly objectDirs: readonly string[];
}

export interface AgentRepositoryOptions {
  readonly repo: string;
  readonly commonDir: string;
  readonly branch: string;
  /** Where to make it: must not exist yet (planAgentRepository makes it). */
  readonly dir: string;
  /** The container's user, who owns it once it is made. */
  readonly user: ContainerUser;
  /** Where the branch starts when the host has no such branch yet (Sandcastle makes it there next: ADR 0052). */
  readonly startAt?: string;
}

/** `<id> <ref>` lines of the host's shared refs. */
async function hostRefs(repo: string): Promise<Map<string, string>> {
  const out = await git(repo, ["for-each-ref", "--format=%(objectname) %(refname)", ...SHARED_REFS]);
  const refs = new Map<string, string>();
  for (const line of out.split("\n")) {
    const space = line.indexOf(" ");
    if (space > 0) refs.set(line.slice(space + 1), line.slice(0, space));
  }
  return refs;
}

/** The host's object directory and those it borrows from (its own alternates, which git follows in turn). */
export async function objectDirs(commonDir: string): Promise<string[]> {
  const own = await realpath(join(commonDir, "objects"));
  const dirs = [own];
  const alternates = await readFile(join(own, "info", "alternates"), "utf8").catch(() => "");
  for (const line of alternates.split("\n")) {
    const entry = line.trim();
    if (entry.length === 0 || entry.startsWith("#")) continue;
    const dir = await realpath(isAbsolute(entry) ? entry : resolve(own, entry)).catch(() => undefined);
    if (dir !== undefined && !dirs.includes(dir)) dirs.push(dir);
  }
  return dirs;
}

/** Writes a file that must not exist yet (never through something already there). */
async function create(path: string, text: string): Promise<void> {
  const fh = await open(path, constants.O_WRONLY | constants.O_CREAT | constants.O_EXCL | constants.O_NOFOLLOW, 0o644);
  try {
    await fh.writeFile(text);
  } finally {
    await fh.close();
  }
}

/** The agent's repository's directory, made empty, and the host's object directories it borrows: what its container mounts. */
export async function planAgentRepository(opts: Pick<AgentRepositoryOptions, "commonDir" | "dir">): Promise<{ readonly objectDirs: readonly string[] }> {
  const dirs = await objectDirs(opts.commonDir);
  await mkdir(opts.dir, { mode: 0o755 });
  return { objectDirs: dirs };
}

/** The planned repository made in its directory from the host's refs as they are now, then given to the container's user (the agent starts only after). */
export async function makeAgentRepository(opts: AgentRepositoryOptions, plan: { readonly objectDirs: readonly string[] }): Promise<AgentRepository> {
  const refs = await hostRefs(opts.repo);
  const base = refs.get(branchRef(opts.branch)) ?? opts.startAt;
  if (base === undefined) throw new RunFailure("agent_failed", `branch ${opts.branch} is not in ${opts.repo}: the agent's repository cannot be made`);
  refs.set(branchRef(opts.branch), base);
  const dirs = plan.objectDirs;
  await git(opts.dir, ["init", "--quiet", "--template=", opts.dir]);
  const gitDir = join(opts.dir, ".git");
  await mkdir(join(gitDir, "objects", "info"), { recursive: true });
  await create(join(gitDir, "objects", "info", "alternates"), `${dirs[0]}\n`);
  // No `# pack-refs with:` header: git then makes no assumption about order or peeling.
  await create(join(gitDir, "packed-refs"), [...refs].map(([name, id]) => `${id} ${name}\n`).join(""));
  await writeFile(join(gitDir, "HEAD"), `ref: ${branchRef(opts.branch)}\n`);
  await copyFile(join(opts.commonDir, "shallow"), join(gitDir, "shallow")).catch((error: NodeJS.ErrnoException) => {
    if (error.code !== "ENOENT") throw error;
  });
  await git(opts.dir, ["read-tree", "-u", "--reset", "HEAD"]);
  const config = await readFile(join(gitDir, "config"), "utf8");
  await handBack([opts.dir], opts.user);
  return { dir: opts.dir, branch: opts.branch, base, refs, config, objectDirs: dirs };
}
