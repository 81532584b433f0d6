// The sandbox contains a hostile agent (ADR 0033), on real podman: each run's agent makes one legitimate commit,
// then plants one thing in its repository that would run a command (writing `id` to a marker path on the host)
// or change the host repository, were any git on the host to read it. For each: no marker appears — not during
// the run, not from its retained workspace, not from the host git commands an operator runs next — the host
// repository's config, hooks and other refs are as they were, the commit lands on the run's branch, and the
// attempt is reported: the result's refused_changes, the session log, an audit row.
import { execFileSync } from "node:child_process";
import { existsSync, readdirSync, readFileSync, writeFileSync } from "node:fs";
import { join, resolve } from "node:path";
import { afterEach, beforeEach, describe, expect, it } from "vitest";
import { runCli } from "../../helpers/cli.js";
import { ContainerRuns } from "../../helpers/container-runs.js";
import { gitIn, containersGone, skipContainers } from "../../helpers/containers.js";

const HOSTILE = resolve(import.meta.dirname, "../../fixtures/sandcastle/hostile");
const BRANCH = "agent/contained";
/** Every hook git runs (githooks(5)), and those of its companions. */
const HOOKS = [
  "applypatch-msg", "pre-applypatch", "post-applypatch", "pre-commit", "pre-merge-commit", "prepare-commit-msg", "commit-msg", "post-commit",
  "pre-rebase", "post-checkout", "post-merge", "pre-push", "pre-receive", "update", "proc-receive", "post-receive", "post-update",
  "reference-transaction", "push-to-checkout", "pre-auto-gc", "post-rewrite", "sendemail-validate", "fsmonitor-watchman",
  "p4-changelist", "p4-prepare-changelist", "p4-post-changelist", "p4-pre-submit", "post-index-change",
];

let c: ContainerRuns;
let marker: string;

beforeEach(() => {
  c = new ContainerRuns();
  marker = join(c.s.dir.path, "out", "host-code-ran");
  // Refs the agent will try to move or delete, beside the branch it may change.
  gitIn(c.repo, "branch", "other-branch");
  gitIn(c.repo, "tag", "v0");
  gitIn(c.repo, "tag", "v1");
  c.handRepoToAgentUser();
});
afterEach(() => c.close());

/** What of the host repository a run must not change: its config, its hooks, every ref but the run's branch. */
function hostState(): { config: string; hooks: string[]; refs: string } {
  return {
    config: readFileSync(join(c.repo, ".git", "config"), "utf8"),
    hooks: readdirSync(join(c.repo, ".git", "hooks")).sort(),
    refs: gitIn(c.repo, "for-each-ref", "--format=%(objectname) %(refname)")
      .split("\n")
      .filter((l) => !l.endsWith(` refs/heads/${BRANCH}`))
      .join("\n"),
  };
}

/** What an operator does next on the host: everything that would run a planted fsmonitor, hook, filter, diff driver or pager. */
function operatorGit(dir: string, branch: string): void {
  // The operator trusts the repository's owner in their own config: `-c` would not reach the git that a retained
  // workspace (a partial clone) starts in the host repository to fetch a blob it does not keep.
  const globalConfig = join(c.s.dir.path, "operator.gitconfig");
  writeFileSync(globalConfig, "[safe]\n\tdirectory = *\n");
  const env = { ...process.env, GIT_CONFIG_GLOBAL: globalConfig, PAGER: "cat", GIT_PAGER: "" };
  const git = (...args: string[]) => execFileSync("git", args, { cwd: dir, stdio: "pipe", env });
  git("status");
  git("log", "-p", "-2", branch);
  git("diff", "HEAD", branch);
  git("show", branch);
  const checkout = join(c.s.dir.path, `checkout-${Math.random().toString(36).slice(2, 8)}`);
  git("worktree", "add", "--detach", checkout, branch);
  git("worktree", "remove", "--force", checkout);
}

type Plant = { plant: string; reported: RegExp[] };
const PLANTS: Plant[] = [
  { plant: "fsmonitor", reported: [/^git config: core\.fsmonitor set$/] },
  { plant: "hooks-path", reported: [/^git config: core\.hookspath set$/] },
  { plant: "hooks", reported: HOOKS.map((h) => new RegExp(`^hook ${h}$`)) },
  { plant: "ssh-command", reported: [/^git config: core\.sshcommand set$/, /^git config: remote\.origin\.url set$/] },
  { plant: "pager", reported: [/^git config: core\.pager set$/] },
  { plant: "diff-external", reported: [/^git config: diff\.external set$/] },
  { plant: "filter", reported: [/^git config: filter\.evil\.clean set$/, /^git config: filter\.evil\.smudge set$/] },
  { plant: "include", reported: [/^git config: include\.path set$/] },
  { plant: "symlink", reported: [/^symlink \.git\/escape$/, /^symlink \.git\/info$/] },
  { plant: "refs", reported: [/^moved refs\/heads\/main$/, /^deleted refs\/heads\/other-branch$/, /^moved refs\/tags\/v1$/, /^deleted refs\/tags\/v0$/] },
  { plant: "replace", reported: [/^created refs\/replace\/[0-9a-f]{40}$/] },
];

describe.skipIf(skipContainers)("a hostile agent in a podman run changes nothing on the host but its own branch", { timeout: 240_000 }, () => {
  it.each(PLANTS)("$plant", async ({ plant, reported }) => {
    const before = hostState();
    await c.startWorker();
    const req = c.request(HOSTILE, { branch: BRANCH }, { PLANT: plant, MARK: marker, HOOKS: HOOKS.join(" ") });
    const run = await c.enqueueWaiting(req);
    const result = await run.result();

    // The run's own work is delivered: its branch has the agent's commit(s), with the legitimate file.
    expect(result, result.message ?? "").toMatchObject({ status: "ok", branch: BRANCH, failure_reason: null });
    expect(result.commits.length).toBeGreaterThanOrEqual(1);
    expect(gitIn(c.repo, "rev-parse", BRANCH)).toBe(result.commits.at(-1)!.sha);
    expect(gitIn(c.repo, "show", `${BRANCH}:work-${plant}.txt`)).toBe(`work for ${plant}`);

    // Nothing else of the host repository changed.
    expect(hostState()).toEqual(before);

    // The attempt is reported: in the result, the session log, the audit.
    for (const pattern of reported) expect(result.refused_changes).toEqual(expect.arrayContaining([expect.stringMatching(pattern)]));
    const logs = await runCli(["logs", String(req.session_id)], c.env());
    expect(logs.stdout).toMatch(/── run refused \(not taken: the run changes only agent\/contained\): /);
    const audited = c.s.auditRows().filter((r) => r.type === "sandcastle_changes_refused" && r.run_id === run.runId);
    expect(audited).toHaveLength(1);
    expect(audited[0]!.changes).toEqual(result.refused_changes);

    // The retained workspace is the host's own repository of the checked branch: nothing planted came with it.
    await c.s.kept(run.runId);
    const workspace = join(c.s.runsDir, run.runId, "workspace");
    expect(existsSync(join(workspace, ".git", "hooks"))).toBe(false);
    // Its config is the one the worker wrote (a partial clone's): no key that runs a command or reads another file.
    const keys = execFileSync("git", ["config", "--file", join(workspace, ".git", "config"), "--name-only", "--list"], { encoding: "utf8" });
    expect(keys).not.toMatch(/^(core\.(fsmonitor|hookspath|sshcommand|pager|editor|askpass)|diff\.|filter\.|include\.|includeif\.|merge\.|credential\.|alias\.)/im);
    expect(existsSync(join(c.s.runsDir, run.runId, "agent"))).toBe(false);

    // What an operator runs next, in the host repository and in the retained workspace.
    operatorGit(c.repo, BRANCH);
    operatorGit(workspace, BRANCH);
    expect(existsSync(marker), existsSync(marker) ? readFileSync(marker, "utf8") : "").toBe(false);
    await containersGone(run.runId);
  });
});
