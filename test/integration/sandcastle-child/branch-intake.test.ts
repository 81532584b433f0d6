// The host taking a run's branch from a bundle (branch-intake.ts), with real git and hostile bundles made the
// way an agent could make them in its own repository: only the run's branch, every object fsck-clean, a tip
// that descends from the base, the branch where the phase left it; anything else is refused and moves nothing.
import { execFileSync } from "node:child_process";
import { mkdtempSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterEach, beforeEach, describe, expect, it } from "vitest";
import { IntakeRefused, readBundleHeader, takeBranch } from "../../../src/sandcastle/child/branch-intake.js";
import { gitOut, makeGitRepo } from "../../helpers/git-repo.js";

const BRANCH = "agent/intake";
let root: string;
let host: string;
let agent: string;
let base: string;

const git = (cwd: string, ...args: string[]) => gitOut(cwd, ...args);
const commit = (cwd: string, file: string, text: string) => {
  writeFileSync(join(cwd, file), text);
  git(cwd, "add", file);
  git(cwd, "-c", "user.name=a", "-c", "user.email=a@b", "commit", "-q", "-m", `add ${file}`);
};

beforeEach(() => {
  root = mkdtempSync(join(tmpdir(), "scq-intake-"));
  host = join(root, "host");
  agent = join(root, "agent");
  makeGitRepo(host);
  git(host, "branch", BRANCH);
  git(host, "branch", "other");
  base = git(host, "rev-parse", BRANCH);
  execFileSync("git", ["clone", "-q", "--no-local", host, agent]);
  git(agent, "checkout", "-q", "-b", BRANCH, `origin/${BRANCH}`);
});
afterEach(() => rmSync(root, { recursive: true, force: true }));

/** A bundle of `revs` from the agent's repository, less what the host had. */
function bundle(...revs: string[]): string {
  const path = join(root, `b-${Math.random().toString(36).slice(2, 8)}.bundle`);
  execFileSync("git", ["bundle", "create", "-q", path, ...revs, `^${base}`], { cwd: agent, stdio: "pipe" });
  return path;
}

const take = (path: string, branchBase = base) =>
  takeBranch({ repo: host, commonDir: join(host, ".git"), branch: BRANCH, base: branchBase, bundle: path, runId: "run-test", user: { uid: 1000, gid: 1000 } });
const hostRefs = () => git(host, "for-each-ref", "--format=%(objectname) %(refname)");

describe("taking a run's branch from its bundle", () => {
  it("takes the branch: the tip, its objects, nothing else", async () => {
    commit(agent, "work.txt", "work\n");
    const tip = git(agent, "rev-parse", "HEAD");
    const header = await readBundleHeader(bundle(`refs/heads/${BRANCH}`));
    expect(header.refs).toEqual([{ id: tip, name: `refs/heads/${BRANCH}` }]);
    expect(header.prerequisites).toEqual([base]);

    const before = hostRefs();
    expect(await take(bundle(`refs/heads/${BRANCH}`))).toBe(tip);
    expect(git(host, "rev-parse", BRANCH)).toBe(tip);
    expect(git(host, "show", `${BRANCH}:work.txt`)).toBe("work");
    expect(hostRefs().replace(`${tip} refs/heads/${BRANCH}`, `${base} refs/heads/${BRANCH}`)).toBe(before);
  });

  it("refuses a bundle holding another ref, or more than the branch", async () => {
    commit(agent, "work.txt", "work\n");
    git(agent, "branch", "-f", "main", "HEAD");
    const before = hostRefs();
    await expect(take(bundle("refs/heads/main"))).rejects.toThrow(/must hold exactly refs\/heads\/agent\/intake; it holds refs\/heads\/main/);
    await expect(take(bundle(`refs/heads/${BRANCH}`, "refs/heads/main"))).rejects.toThrow(IntakeRefused);
    expect(hostRefs()).toBe(before);
  });

  it("refuses objects that fail fsck (a tree entry named .git), and moves nothing", async () => {
    const blob = execFileSync("git", ["hash-object", "-w", "--stdin"], { cwd: agent, input: "[core]\n\tfsmonitor = evil\n", encoding: "utf8" }).trim();
    const tree = execFileSync("git", ["mktree"], { cwd: agent, input: `100644 blob ${blob}\t.git\n`, encoding: "utf8" }).trim();
    const bad = git(agent, "-c", "user.name=a", "-c", "user.email=a@b", "commit-tree", tree, "-p", "HEAD", "-m", "a .git entry");
    git(agent, "update-ref", `refs/heads/${BRANCH}`, bad);
    const before = hostRefs();
    await expect(take(bundle(`refs/heads/${BRANCH}`))).rejects.toThrow(/fail git's checks: .*hasDotgit/);
    expect(hostRefs()).toBe(before);
    expect(() => execFileSync("git", ["cat-file", "-e", bad], { cwd: host, stdio: "pipe" })).toThrow(); // not even stored
  });

  it("refuses a tip that does not descend from the base (history rewritten past it)", async () => {
    git(agent, "checkout", "-q", "--orphan", "fresh");
    commit(agent, "other.txt", "unrelated\n");
    git(agent, "branch", "-f", BRANCH, "HEAD");
    const path = join(root, "orphan.bundle");
    execFileSync("git", ["bundle", "create", "-q", path, `refs/heads/${BRANCH}`], { cwd: agent, stdio: "pipe" });
    const before = hostRefs();
    await expect(take(path)).rejects.toThrow(/does not descend from/);
    expect(hostRefs()).toBe(before);
  });

  it("never overwrites the branch when it moved on the host while the agent worked", async () => {
    commit(agent, "work.txt", "work\n");
    const path = bundle(`refs/heads/${BRANCH}`);
    commit(host, "meanwhile.txt", "someone else\n");
    git(host, "branch", "-f", BRANCH, "HEAD");
    const moved = git(host, "rev-parse", BRANCH);
    await expect(take(path)).rejects.toThrow(/moved on the host while the agent worked/);
    expect(git(host, "rev-parse", BRANCH)).toBe(moved);
  });

  it("refuses what is not a bundle", async () => {
    const path = join(root, "not.bundle");
    writeFileSync(path, "#!/bin/sh\necho hi\n\nPACK");
    await expect(take(path)).rejects.toThrow(/not a git bundle/);
  });
});
