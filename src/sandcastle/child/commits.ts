// The commits a run added to its branch: `git rev-list <base>..<branch>`, oldest first, where
// <base> is what the branch pointed at before the run (or HEAD, which Sandcastle branches from,
// when the branch did not exist yet).
import { branchRef, git, gitSync, resolveCommit, type RepositoryState } from "./repository.js";

export interface RunBase {
  readonly repo: string;
  readonly branch: string;
  readonly base: string;
  readonly branchExisted: boolean;
}

/** The run's base, from what checkRepository read: the branch's commit, or HEAD's when the branch is new. */
export function runBase(repo: string, branch: string, state: Pick<RepositoryState, "head" | "branchTip">): RunBase {
  const existed = state.branchTip !== undefined;
  return { repo, branch, base: state.branchTip ?? state.head, branchExisted: existed };
}

const toCommits = (out: string) => (out.length === 0 ? [] : out.split("\n").map((sha) => ({ sha: sha.trim() })));

export async function commitsAdded(run: RunBase): Promise<{ sha: string }[]> {
  if ((await resolveCommit(run.repo, branchRef(run.branch))) === undefined) return [];
  try {
    return toCommits(await git(run.repo, ["rev-list", "--reverse", `${run.base}..${branchRef(run.branch)}`]));
  } catch {
    return [];
  }
}

/** Same, for exit paths that cannot await. */
export function commitsAddedSync(run: RunBase): { sha: string }[] {
  try {
    return toCommits(gitSync(run.repo, ["rev-list", "--reverse", `${run.base}..${branchRef(run.branch)}`]));
  } catch {
    return [];
  }
}
