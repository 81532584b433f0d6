// What a container run costs beyond the agent (goals and figures: docs/bench.md), each against its baseline in the same run:
//   container-overhead   enqueue → result readable, for a script agent that commits at once, against the same work
//                        by hand (git worktree add, podman run --rm with the run's isolation flags and mounts, the
//                        commit, git worktree remove); alternating pairs; and where one run's time goes, phase by phase
//                        (from the job, the session log's entry times and podman's own events)
//   first-line           enqueue → the agent's first line readable in the session log (what SSE serves), for an agent
//                        whose first act is that line, against a podman run --rm of the same image printing it
//   retained-footprint   a run's retained workspace on a repository with 60 MB of history: its git dir against the
//                        checked-out files plus the objects the run itself created
//   agent-image          the sandbox image's size, and what a rebuild with an unchanged recipe costs
// They need podman and the sandbox image (scripts/build-sandbox-image.sh); without them each says why and is skipped.
import { execFileSync, spawn, spawnSync } from "node:child_process";
import { randomBytes } from "node:crypto";
import { chmodSync, chownSync, lstatSync, mkdirSync, mkdtempSync, readdirSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join, resolve } from "node:path";
import type { QueueEvents } from "bullmq";
import { enqueueRun } from "../queues/index.js";
import { DEFAULT_SANDBOX_IMAGE, isolationArgs, mountArg } from "../src/sandcastle/containers/container-args.js";
import { readMetaWhenKept } from "../src/sandcastle/retention/retained-runs.js";
import { entryLines, sessionLogKey } from "../src/session-log/session-log.js";
import { makeGitRepo } from "../test/helpers/git-repo.js";
import { alternatePairs, median, round } from "./stats.js";
import { withWorkers, type BenchContext } from "./sandcastle-run.js";

const ROOT = resolve(import.meta.dirname, "../..");
const COMMIT_TEMPLATE = join(ROOT, "test/fixtures/sandcastle/container-commit");
/** An agent whose first act is its line, as the by-hand side's `echo` (the commit agent's line came after its commit). */
const FIRST_LINE_TEMPLATE = join(ROOT, "test/fixtures/sandcastle/container-first-line");
const AGENT_UID = 1000;
/**
 * Each measurement, by hand or queued, starts on a machine at rest: the previous run's tail (its container's end, its
 * workspace kept, the worker's next spare child starting) done. Otherwise that tail slows the next by-hand side and
 * meets the next queued run with a child still starting, which no run minutes after the last one meets.
 */
const SETTLE_MS = 2000;
const settled = <T>(measure: (rep: number) => Promise<T>) => async (rep: number): Promise<T> => {
  await new Promise((r) => setTimeout(r, SETTLE_MS));
  return measure(rep);
};
const LIMITS = { memory: "512m", cpus: 1, pids: 256 };

const engineEnv = (): NodeJS.ProcessEnv => ({ ...process.env });

/** Why container benches cannot run here, or undefined. */
function whyNot(): string | undefined {
  if (spawnSync("sh", ["-c", "command -v podman"]).status !== 0) return "podman is not installed";
  if (spawnSync("podman", ["image", "exists", DEFAULT_SANDBOX_IMAGE], { env: engineEnv() }).status !== 0)
    return `the image ${DEFAULT_SANDBOX_IMAGE} is not built (scripts/build-sandbox-image.sh)`;
  return undefined;
}

function giveTo(path: string, uid: number): void {
  const walk = (p: string) => {
    chownSync(p, uid, uid);
    if (lstatSync(p).isDirectory()) for (const name of readdirSync(p)) walk(join(p, name));
  };
  walk(path);
}

interface Rig {
  readonly dir: string;
  readonly repo: string;
  readonly manifests: string;
  readonly env: NodeJS.ProcessEnv;
}

function rig(): Rig {
  const dir = mkdtempSync(join(tmpdir(), "scq-bench-ctr-"));
  chmodSync(dir, 0o755); // the by-hand baseline's git runs as the agent's user
  const repo = join(dir, "repo");
  makeGitRepo(repo);
  giveTo(repo, AGENT_UID);
  mkdirSync(join(dir, "hands"));
  giveTo(join(dir, "hands"), AGENT_UID);
  const manifests = join(dir, "manifests");
  mkdirSync(manifests);
  mkdirSync(join(dir, "shm"));
  writeFileSync(join(manifests, "bench.json"), JSON.stringify({ project_slug: "bench", vars: [] }));
  const env: NodeJS.ProcessEnv = {
    TAO_SANDCASTLE_ENABLED: "1",
    SANDCASTLE_CONFIG_DIR: join(dir, "shm"),
    ENV_MANIFEST_DIR: manifests,
    AUDIT_LOG_PATH: join(dir, "audit.jsonl"),
    RUNS_DIR: join(dir, "runs"),
    SANDCASTLE_CONTAINER_MEMORY: LIMITS.memory,
    SANDCASTLE_CONTAINER_CPUS: String(LIMITS.cpus),
    SANDCASTLE_CONTAINER_PIDS: String(LIMITS.pids),
    LOG_LEVEL: "silent",
    ...(process.env.CONTAINERS_CONF ? { CONTAINERS_CONF: process.env.CONTAINERS_CONF } : {}),
    // `SANDCASTLE_WARM_CONTAINER=0 npm run bench …`: the same benches with every run starting its own container.
    ...(process.env.SANDCASTLE_WARM_CONTAINER ? { SANDCASTLE_WARM_CONTAINER: process.env.SANDCASTLE_WARM_CONTAINER } : {}),
  };
  return { dir, repo, manifests, env };
}

/** A bench's report of queued runs against the same work by hand: medians, the pairs' ratios, and the goal. */
function queuedAgainstByHand(bench: string, reps: number, pairs: Awaited<ReturnType<typeof alternatePairs>>, goal: number) {
  return {
    bench,
    reps,
    queued_ms: Math.round(median(pairs.measured)),
    by_hand_ms: Math.round(median(pairs.baseline)),
    ratio: pairs.ratio,
    pair_ratios: pairs.ratios,
    goal_ratio_at_most: goal,
    meets_ratio: pairs.ratio <= goal,
  };
}

let seq = 0;
/** One run through the queue; returns when its result is readable (the job finished). */
async function queuedRun(ctx: BenchContext, r: Rig, events: QueueEvents, template = COMMIT_TEMPLATE) {
  const session = `bench-ctr-${++seq}`;
  const started = Date.now();
  const { runId } = await enqueueRun(
    ctx.queues.sandcastleRun,
    {
      session_id: session,
      agent: "script",
      sandbox: "podman",
      dry_run: false,
      prompt_template_dir: template,
      repo_workdir: r.repo,
      branch: `bench/q-${seq}`,
      env_manifest_name: "bench",
      timeout_minutes: 5,
    },
    { envManifestDir: r.manifests },
  );
  const job = await ctx.queues.sandcastleRun.getJob(runId);
  const result = (await job!.waitUntilFinished(events)) as { status: string; message: string | null };
  if (result.status !== "ok") throw new Error(`bench run ${runId} ended ${result.status}: ${result.message}`);
  return { runId, session, started, ms: Date.now() - started, job: (await ctx.queues.sandcastleRun.getJob(runId))! };
}

/** The same work by hand: a worktree, one container with the run's isolation and mounts committing, the worktree gone. */
function byHand(r: Rig, n: number, command: string): number {
  const started = Date.now();
  const wt = join(r.dir, "hands", `hand-${n}`);
  const asAgent = { uid: AGENT_UID, gid: AGENT_UID, cwd: r.repo, stdio: "ignore" as const, env: { PATH: process.env.PATH, HOME: r.dir } };
  execFileSync("git", ["worktree", "add", "-q", "-b", `bench/hand-${n}`, wt], asAgent);
  const args = [
    "run",
    "--rm",
    ...isolationArgs({ engine: "podman", user: { uid: AGENT_UID, gid: AGENT_UID }, limits: LIMITS, network: "none", rootless: false }),
    mountArg({ hostPath: wt, sandboxPath: "/home/agent/workspace" }),
    mountArg({ hostPath: join(r.repo, ".git"), sandboxPath: join(r.repo, ".git") }),
    "--workdir=/home/agent/workspace",
    DEFAULT_SANDBOX_IMAGE,
    "sh",
    "-c",
    command,
  ];
  execFileSync("podman", args, { env: engineEnv(), stdio: "ignore" });
  execFileSync("git", ["worktree", "remove", "--force", wt], asAgent);
  return Date.now() - started;
}

const HAND_COMMIT = "echo by-hand > by-hand.txt && git add by-hand.txt && git -c user.name=b -c user.email=b@b commit -q -m by-hand";

/** podman's events of one container, as ms since `since`. */
function containerEvents(name: string, since: number): Array<{ status: string; at: number }> {
  const out = spawnSync(
    "podman",
    ["events", "--stream=false", `--since=${new Date(since - 1000).toISOString()}`, `--filter=container=${name}`, "--format={{.Time}}|{{.Status}}"],
    { env: engineEnv(), encoding: "utf8" },
  ).stdout;
  return out
    .split("\n")
    .filter(Boolean)
    .map((line) => {
      const [time = "", status = ""] = line.split("|");
      return { status, at: Date.parse(time.replace(/ \+0000 UTC$/, "Z").replace(" ", "T").replace(/(\.\d{3})\d+/, "$1")) - since };
    });
}

/** When each of the session's log lines was stored (a stream entry id is its ms), as ms since `since`. */
async function lineTimes(ctx: BenchContext, session: string, since: number): Promise<Array<{ line: string; at: number }>> {
  const entries = (await ctx.redis.xrange(sessionLogKey(ctx.prefix, session), "-", "+")) as Array<[string, string[]]>;
  return entries.flatMap(([id, fields]) => entryLines(fields).map((line) => ({ line, at: Number(id.split("-")[0]) - since })));
}

/** Where one queued run's time goes, from the outside: the job, the session log's entry times, podman's events. */
async function phases(ctx: BenchContext, run: Awaited<ReturnType<typeof queuedRun>>): Promise<Record<string, number | string>> {
  const lines = await lineTimes(ctx, run.session, run.started);
  const events = containerEvents(run.runId, run.started);
  const first = (status: string) => events.find((e) => e.status === status)?.at ?? Number.NaN;
  // Commands go over the container's exec channel (ADR 0049): a `podman exec` here means the channel was gone.
  const execs = events.filter((e) => e.status === "exec");
  const execDied = events.filter((e) => e.status === "exec_died");
  const lineAt = (pattern: RegExp) => lines.find((l) => pattern.test(l.line))?.at ?? Number.NaN;
  return {
    worker_picked_up: (run.job.processedOn ?? Number.NaN) - run.started,
    child_first_line: lineAt(/^\x1e?── run started on/),
    container_created: first("create"),
    container_started: first("start"),
    podman_execs: execs.length,
    podman_exec_ms_total: round(execs.reduce((sum, e) => sum + ((execDied.find((d) => d.at >= e.at)?.at ?? e.at) - e.at), 0)),
    agent_line: lineAt(/committed in-container\.txt/),
    last_podman_exec_done: execDied.at(-1)?.at ?? Number.NaN,
    container_removed: first("remove"),
    run_ended_line: lineAt(/^\x1e?── run ok/),
    job_finished: (run.job.finishedOn ?? Number.NaN) - run.started,
    result_readable: run.ms,
    ...(process.env.SCQ_BENCH_TRACE
      ? { trace: JSON.stringify([...events.map((e) => `${e.at} ${e.status}`), ...lines.map((l) => `${l.at} ${l.line.slice(0, 50)}`)]) }
      : {}),
  };
}

export async function benchContainerOverhead(ctx: BenchContext): Promise<object> {
  const why = whyNot();
  if (why !== undefined) return { bench: "container_run_overhead", skipped: why };
  const reps = ctx.quick ? 2 : 5;
  const r = rig();
  try {
    let last: Awaited<ReturnType<typeof queuedRun>> | undefined;
    const pairs = await withWorkers(ctx, r, async (events) => {
      await queuedRun(ctx, r, events); // warm: the first run pays the engine's and the page cache's first touches
      byHand(r, 0, HAND_COMMIT);
      return alternatePairs(
        reps,
        settled(async (rep) => byHand(r, rep + 1, HAND_COMMIT)),
        settled(async () => {
          last = await queuedRun(ctx, r, events);
          return last.ms;
        }),
      );
    });
    return { ...queuedAgainstByHand("container_run_overhead", reps, pairs, 3), last_run_phases_ms: last ? await phases(ctx, last) : null };
  } finally {
    rmSync(r.dir, { recursive: true, force: true });
  }
}

/** The time until the first line a container prints, by hand: `podman run --rm … echo`. */
function firstLineByHand(): Promise<number> {
  const started = Date.now();
  return new Promise((resolveMs, reject) => {
    const args = [
      "run",
      "--rm",
      ...isolationArgs({ engine: "podman", user: { uid: AGENT_UID, gid: AGENT_UID }, limits: LIMITS, network: "none", rootless: false }),
      DEFAULT_SANDBOX_IMAGE,
      "sh",
      "-c",
      "echo first-line; sleep 0.2",
    ];
    const proc = spawn("podman", args, { env: engineEnv(), stdio: ["ignore", "pipe", "ignore"] });
    proc.stdout!.once("data", () => resolveMs(Date.now() - started));
    proc.once("error", reject);
  });
}

export async function benchFirstLine(ctx: BenchContext): Promise<object> {
  const why = whyNot();
  if (why !== undefined) return { bench: "time_to_first_line", skipped: why };
  const reps = ctx.quick ? 2 : 5;
  const r = rig();
  try {
    const pairs = await withWorkers(ctx, r, async (events) => {
      // The warm-up is a run like the measured ones: the worker's spares then keep a container of their shape (ADR 0053).
      await queuedRun(ctx, r, events, FIRST_LINE_TEMPLATE);
      return alternatePairs(
        reps,
        settled(() => firstLineByHand()),
        settled(async () => {
          const run = await queuedRun(ctx, r, events, FIRST_LINE_TEMPLATE);
          const at = (await lineTimes(ctx, run.session, run.started)).find((l) => /(^|\s)first-line$/.test(l.line))?.at;
          return at ?? Number.NaN;
        }),
      );
    });
    return queuedAgainstByHand("time_to_first_line", reps, pairs, 1.5);
  } finally {
    rmSync(r.dir, { recursive: true, force: true });
  }
}

/** `bytes` of text shaped like source code (identifiers, numbers, indentation): it compresses as a repository's files do. */
function sourceLike(bytes: number, seed: number): string {
  const words = [
    "const", "return", "await", "function", "export", "import", "value", "result", "config", "request", "(", ")", "{", "}", ";", "=>", "if", "else",
  ];
  let out = "";
  let n = seed * 7919;
  while (out.length < bytes) {
    n = (n * 1103515245 + 12345) % 2 ** 31;
    out += `${"  ".repeat(n % 4)}${words[n % words.length]} ${words[(n >> 5) % words.length]}_${n % 9973} = ${n % 100003};\n`;
  }
  return out.slice(0, bytes);
}

/** Bytes of the files under `path` (directories' own sizes left out: they are the file system's, not the data's). */
const fileBytes = (path: string) =>
  Number(execFileSync("sh", ["-c", 'find "$1" -type f -printf "%s\\n" | awk "{s+=\\$1} END {print s+0}"', "sh", path], { encoding: "utf8" }).trim());

export async function benchRetainedFootprint(ctx: BenchContext): Promise<object> {
  const why = whyNot();
  if (why !== undefined) return { bench: "retained_footprint", skipped: why };
  const r = rig();
  try {
    // 60 MB of history the checkout no longer holds.
    const git = (...args: string[]) =>
      execFileSync("git", ["-c", "safe.directory=*", "-c", "user.name=b", "-c", "user.email=b@b", ...args], { cwd: r.repo, stdio: "pipe" });
    for (let i = 0; i < 12; i++) {
      writeFileSync(join(r.repo, "history.bin"), randomBytes(5 * 2 ** 20));
      git("add", "history.bin");
      git("commit", "-q", "-m", `history ${i}`);
    }
    git("rm", "-q", "history.bin");
    // A checkout of source-like text (4 MB in 200 files), as a real repository has: the workspace keeps its files once.
    mkdirSync(join(r.repo, "src"));
    for (let i = 0; i < 200; i++) writeFileSync(join(r.repo, "src", `module-${i}.ts`), sourceLike(20_000, i));
    git("add", "src");
    git("commit", "-q", "-m", "history gone, sources in");
    giveTo(r.repo, AGENT_UID);
    const historyBytes = fileBytes(join(r.repo, ".git"));
    const { run, ms, keptMs } = await withWorkers(ctx, r, async (events) => {
      const started = Date.now();
      const done = await queuedRun(ctx, r, events);
      const resultMs = Date.now() - started;
      // The workspace is kept after the result is readable (ADR 0051): its copy's own time, from the result.
      if ((await readMetaWhenKept(join(r.dir, "runs"), done.runId)) === null) throw new Error(`bench run ${done.runId} was not retained`);
      return { run: done, ms: resultMs, keptMs: Date.now() - started - resultMs };
    });
    const workspace = join(r.dir, "runs", run.runId, "workspace");
    const gitDir = fileBytes(join(workspace, ".git"));
    const files = fileBytes(workspace) - gitDir;
    const runObjects = String(
      execFileSync(
        "sh",
        [
          "-c",
          `git -c safe.directory='*' rev-list --objects main..bench/q-${seq} | git -c safe.directory='*' cat-file --batch-check='%(objectsize:disk)' | awk '{s+=$1} END {print s+0}'`,
        ],
        { cwd: r.repo },
      ),
    ).trim();
    const budget = files + Number(runObjects);
    const total = files + gitDir;
    return {
      bench: "retained_footprint",
      history_bytes: historyBytes,
      workspace_bytes: total,
      workspace_git_bytes: gitDir,
      checked_out_bytes: files,
      run_object_bytes: Number(runObjects),
      ratio: round(total / budget),
      goal_ratio_at_most: 1.1,
      meets_ratio: total <= budget * 1.1,
      run_ms: ms,
      kept_after_result_ms: keptMs,
    };
  } finally {
    rmSync(r.dir, { recursive: true, force: true });
  }
}

export async function benchAgentImage(): Promise<object> {
  const why = whyNot();
  if (why !== undefined) return { bench: "agent_image", skipped: why };
  const size = Number(execFileSync("podman", ["image", "inspect", "--format={{.Size}}", DEFAULT_SANDBOX_IMAGE], { env: engineEnv(), encoding: "utf8" }).trim());
  const started = Date.now();
  execFileSync(join(ROOT, "scripts/build-sandbox-image.sh"), ["--cli", "podman"], { env: engineEnv(), stdio: "ignore" });
  return { bench: "agent_image", size_mib: Math.round(size / 2 ** 20), unchanged_rebuild_ms: Date.now() - started };
}
