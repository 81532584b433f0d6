// A spare child's warm container (ADR 0053) on real podman, with real worker processes and the built-in child: after a
// container run, the worker's next spare starts a container shaped like it; the next run of that shape takes it (named
// after the run, its end moved to the run's, the agent's repository made in it, no secret in its config) and its commit
// lands; a run of another shape ends it and starts its own; a second worker's start leaves a live worker's warm container
// alone; a stopped worker leaves nothing, and a killed one's spare directories go at the next start.
import { cpSync, existsSync, readdirSync, readFileSync, writeFileSync } from "node:fs";
import { join, resolve } from "node:path";
import { afterEach, beforeEach, describe, expect, it } from "vitest";
import { LABEL_DEPLOYMENT, LABEL_RUN_ID, LABEL_SPARE_OF, SECRET_ENV_PATH } from "../../../src/sandcastle/containers/container-args.js";
import { runCli, waitFor } from "../../helpers/cli.js";
import { ContainerRuns } from "../../helpers/container-runs.js";
import { gitIn, inspect, podman, skipContainers } from "../../helpers/containers.js";
import { SECRET_VALUE } from "../../helpers/run-scope.js";

const TEMPLATE = resolve(import.meta.dirname, "../../fixtures/sandcastle/container-commit");
const RUN_TIMEOUT_MS = 150_000;

let c: ContainerRuns;
beforeEach(() => {
  c = new ContainerRuns();
  c.handRepoToAgentUser();
});
afterEach(() => c.close());

/** The deployment's containers: id, name, run-id label, spare-of label, running. */
function containers(): Array<{ id: string; name: string; runId: string; spareOf: string; running: boolean }> {
  const ids = podman(["ps", "--all", "--no-trunc", `--filter=label=${LABEL_DEPLOYMENT}=${c.deployment}`, "--format={{.ID}}"], { allowFail: true })
    .split("\n")
    .filter(Boolean);
  return ids.flatMap((id) => {
    try {
      const info = inspect(id);
      const labels = info.Config.Labels as Record<string, string>;
      const running = (info.State as { Running: boolean }).Running;
      return [{ id, name: String(info.Name), runId: labels[LABEL_RUN_ID] ?? "", spareOf: labels[LABEL_SPARE_OF] ?? "", running }];
    } catch {
      return []; // removed meanwhile
    }
  });
}

const exists = (name: string) => containers().some((x) => x.name === name);
const warmOnes = () => containers().filter((x) => x.spareOf !== "" && x.running && x.name.startsWith("spare-"));

async function warmContainer(): Promise<{ id: string; name: string; spareOf: string }> {
  await waitFor(() => warmOnes().length === 1, 60_000, () => `one warm container (${JSON.stringify(containers())})`);
  return warmOnes()[0]!;
}

const spareDirs = () => [
  ...readdirSync(c.s.configDir).filter((n) => n.startsWith("scq-spare-")),
  ...(existsSync(c.s.runsDir) ? readdirSync(c.s.runsDir).filter((n) => n.startsWith("spare-")) : []),
];

async function commitRun(patch: Record<string, unknown> = {}, extraEnv: Record<string, string> = {}) {
  const req = c.request(TEMPLATE, { branch: `agent/warm-${Math.random().toString(36).slice(2, 8)}`, ...patch }, extraEnv);
  return { ...(await c.enqueueWaiting(req)), session: String(req.session_id) };
}

describe.skipIf(skipContainers)("a spare's warm container", { timeout: 300_000 }, () => {
  it("is started after a container run, taken by the next run of its shape (renamed, no secret in its config), and nothing is left", async () => {
    const w = await c.startWorker();
    // The worker's first spare has no shape to follow: no warm container before a container run.
    await new Promise((r) => setTimeout(r, 3000));
    expect(warmOnes()).toEqual([]);
    const first = await commitRun();
    expect((await first.result()).status).toBe("ok");

    const warm = await warmContainer();
    expect(warm.spareOf.split(" ")[2]).toBe(String(w.pid)); // the worker it waits for
    const [runDirName] = spareDirs().filter((n) => n.startsWith("scq-spare-"));
    expect(runDirName).toBeDefined();
    // Shaped like the last run: mounts of the spare's own directories, HOME only in its env file until a run takes it.
    const before = inspect(warm.id);
    expect(JSON.stringify(before)).not.toContain(SECRET_VALUE);
    expect(before.Mounts.map((m) => m.Destination)).toContain(SECRET_ENV_PATH);
    expect(readFileSync(join(c.s.configDir, runDirName!, `${warm.name}.env`), "utf8")).not.toContain(SECRET_VALUE);

    const branch = "agent/warm-taken";
    const second = await c.enqueueWaiting(c.request(TEMPLATE, { branch }, { HOLD: "1" }));
    await waitFor(() => c.heldAgentRepo() !== undefined, RUN_TIMEOUT_MS, () => "the agent to start in the warm container");
    // The same container, named after the run once its agent has started; its labels stay the spare's (they cannot change).
    await waitFor(() => exists(second.runId), 10_000, () => "the rename");
    const taken = inspect(second.runId);
    expect(taken.Id).toBe(warm.id);
    expect((taken.Config.Labels as Record<string, string>)[LABEL_RUN_ID]).toBe(warm.name);
    expect(JSON.stringify(taken)).not.toContain(SECRET_VALUE);
    // The agent's repository is in the run's own directory (the spare's, moved), and the secret file went with it.
    expect(c.heldAgentRepo()).toBe(join(c.s.runsDir, second.runId, "agent", warm.name));
    expect(readFileSync(join(c.runDir(second.runId), `${warm.name}.env`), "utf8")).toContain("ANTHROPIC_API_KEY");
    writeFileSync(join(c.heldAgentRepo()!, ".scq-release"), "");
    const result = await second.result();
    expect(result).toMatchObject({ status: "ok", branch, failure_reason: null });
    expect(result.commits).toHaveLength(1);
    expect(gitIn(c.repo, "log", "-1", "--format=%s", branch)).toBe("agent: commit made in the container");
    // The agent saw the run's secret (its length only is recorded), through the env file filled in place.
    expect(gitIn(c.repo, "show", `${branch}:in-container.txt`)).toContain(`secret_length=${SECRET_VALUE.length}`);
    await waitFor(() => !containers().some((x) => x.id === warm.id), 30_000, () => "the taken container gone after its run");
    expect(existsSync(c.runDir(second.runId))).toBe(false);

    // The next spare warms again; a stopped worker leaves no container and no spare directory.
    const next = await warmContainer();
    expect(next.id).not.toBe(warm.id);
    expect(await w.stop()).toBe(0);
    await waitFor(() => containers().length === 0, 30_000, () => `no container of the deployment (${JSON.stringify(containers())})`);
    expect(spareDirs()).toEqual([]);
  });

  it("a run of another shape ends the warm container and starts its own", async () => {
    await c.startWorker();
    expect((await (await commitRun()).result()).status).toBe("ok");
    const warm = await warmContainer();
    // Another template directory: another mount, so another shape.
    const otherTemplate = join(c.s.dir.path, "other-template");
    cpSync(TEMPLATE, otherTemplate, { recursive: true });
    const other = await commitRun({ prompt_template_dir: otherTemplate }, { HOLD: "1" });
    await waitFor(() => c.heldAgentRepo() !== undefined, RUN_TIMEOUT_MS, () => "the agent to start in its own container");
    // Its own container, labelled with its run id; the warm one ended, its files gone from the run's directories.
    const own = inspect(other.runId);
    expect(own.Id).not.toBe(warm.id);
    expect((own.Config.Labels as Record<string, string>)[LABEL_RUN_ID]).toBe(other.runId);
    await waitFor(() => !containers().some((x) => x.id === warm.id), 30_000, () => "the warm container of the other shape gone");
    expect(readdirSync(join(c.s.runsDir, other.runId, "agent")).filter((n) => n.startsWith("spare-"))).toEqual([]);
    expect(readdirSync(c.runDir(other.runId)).filter((n) => n.startsWith("spare-"))).toEqual([]);
    writeFileSync(join(c.heldAgentRepo()!, ".scq-release"), "");
    expect((await other.result()).status).toBe("ok");
  });

  it("a run that fails its checks after its worktree opened ahead (ADR 0053) leaves no worktree, and the next run still works", async () => {
    await c.startWorker();
    expect((await (await commitRun()).result()).status).toBe("ok");
    await warmContainer();
    // The branch checked out in repo_workdir itself: the checks refuse it, after the worktree was asked for beside them.
    const refused = await commitRun({ branch: "main" });
    const result = await refused.result();
    expect(result).toMatchObject({ status: "failed", failure_reason: "invalid_payload" });
    expect(result.message).toMatch(/main is checked out in repo_workdir itself/);
    expect(gitIn(c.repo, "worktree", "list", "--porcelain").split("\n").filter((l) => l.startsWith("worktree "))).toEqual([`worktree ${c.repo}`]);
    expect(gitIn(c.repo, "status", "--porcelain")).toBe("");
    expect(gitIn(c.repo, "rev-parse", "--abbrev-ref", "HEAD")).toBe("main");
    const next = await commitRun();
    expect((await next.result()).status).toBe("ok");
  });

  it("SANDCASTLE_WARM_CONTAINER=0: spares keep no container, and runs start their own", async () => {
    await c.startWorker({ SANDCASTLE_WARM_CONTAINER: "0" });
    expect((await (await commitRun()).result()).status).toBe("ok");
    // The next spare starts at the run's result (3 s at the latest): give it that long, and its container as long again.
    await new Promise((r) => setTimeout(r, 6000));
    expect(containers()).toEqual([]);
    expect(spareDirs()).toEqual([]);
    const second = await commitRun();
    expect((await second.result()).status).toBe("ok");
    expect((await runCli(["logs", String(second.session)], c.env())).stdout).not.toContain("warm one");
  });

  it("a second worker's start leaves a live worker's warm container; a killed worker's spare directories go at the next start", async () => {
    const a = await c.startWorker();
    expect((await (await commitRun()).result()).status).toBe("ok");
    const warm = await warmContainer();
    const b = await c.startWorker();
    expect(containers().some((x) => x.id === warm.id && x.running)).toBe(true);
    expect(await b.stop()).toBe(0);
    // Killed: its spare's stdin closes, the spare exits, and its container ends with its exec channel.
    await a.stop("SIGKILL");
    await waitFor(() => !containers().some((x) => x.id === warm.id), 30_000, () => "the killed worker's warm container gone");
    expect(spareDirs().length).toBeGreaterThan(0);
    const again = await c.startWorker();
    expect(spareDirs()).toEqual([]);
    await again.stop();
  });
});
