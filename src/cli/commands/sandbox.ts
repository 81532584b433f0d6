// `sandbox list [--json] | pin RUN_ID | open RUN_ID [--publish [HOST_PORT:]PORT] [--pin]`: retained run
// workspaces (src/sandcastle/retention/retained-runs.ts) and a shell in one (src/sandcastle/containers/sandbox-shell.ts).
import { spawn } from "node:child_process";
import { mkdtemp, rm } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { scheduleReap } from "../../../queues/index.js";
import { InvalidInputError, SandboxRefusedError } from "../../errors.js";
import { parseRule } from "../../sandcastle/egress/allowlist.js";
import { containerMainDir } from "../../sandcastle/containers/container-args.js";
import { EgressProxy } from "../../sandcastle/egress/egress-proxy.js";
import { publishIntoContainer } from "../../sandcastle/containers/sandbox-publish.js";
import { containerEngine } from "../../sandcastle/contract.js";
import {
  expiresAt, formatBytes, JOB_DIR, listRetained, parseRunId, pinned, readMetaWhenKept, retainedDir, timeLeft, WORKSPACE_DIR, writeMeta, type RetainedMeta,
} from "../../sandcastle/retention/retained-runs.js";
import { EngineSandboxes, parsePublish, sandboxName, sandboxRunArgs, type Publish } from "../../sandcastle/containers/sandbox-shell.js";
import { engineRefusalHint } from "../engine-refusal.js";
import { runtimeDeployment, type Runtime } from "../runtime.js";

const windowMs = (rt: Runtime): number => rt.config.SANDBOX_RETENTION_HOURS * 3_600_000;

function liveness(rt: Runtime): EngineSandboxes {
  return EngineSandboxes.forEngines({
    containerCli: rt.config.SANDCASTLE_CONTAINER_CLI ?? null,
    engineEnv: rt.config.engineEnv,
    path: process.env.PATH,
    home: process.env.HOME,
  });
}

export async function sandboxListCommand(rt: Runtime, opts: { json?: boolean }): Promise<number> {
  const [runs, open] = await Promise.all([listRetained(rt.config.runsDir, runtimeDeployment(rt)), liveness(rt).openSandboxes()]);
  const now = Date.now();
  const rows = runs.map(({ meta, bytes }) => ({
    run_id: meta.run_id,
    session_id: meta.session_id,
    branch: meta.branch,
    status: meta.status,
    bytes,
    open: open.has(meta.run_id),
    ended_at: meta.ended_at,
    expires_at: new Date(expiresAt(meta, windowMs(rt))).toISOString(),
    pinned_until: meta.pinned_until,
    state: open.has(meta.run_id) ? "OPEN" : timeLeft(meta, windowMs(rt), now),
  }));
  if (opts.json) {
    process.stdout.write(`${JSON.stringify({ runs_dir: rt.config.runsDir, retention_hours: rt.config.SANDBOX_RETENTION_HOURS, runs: rows })}\n`);
    return 0;
  }
  if (rows.length === 0) {
    process.stdout.write(
      `no retained runs in ${rt.config.runsDir}${rt.config.SANDBOX_RETENTION_HOURS === 0 ? " (retention is off: SANDBOX_RETENTION_HOURS=0)" : ""}\n`,
    );
    return 0;
  }
  const lines = rows.map((r) => [r.run_id, r.session_id, r.branch, r.status, formatBytes(r.bytes), r.state].join("  "));
  process.stdout.write(`${lines.join("\n")}\n`);
  return 0;
}

/** A retained run that has not expired, or the refusal that names what is wrong. */
async function liveRun(rt: Runtime, runIdInput: string): Promise<RetainedMeta> {
  const runId = parseRunId(runIdInput);
  const meta = await readMetaWhenKept(rt.config.runsDir, runId);
  if (meta === null)
    throw new SandboxRefusedError(`${runId} is not retained (unknown run, or its workspace was already reaped): sandcastle-queue sandbox list shows what is`);
  // RUNS_DIR may be shared: another deployment's run is pinned and opened by that deployment, never scheduled here.
  const owner = await runtimeDeployment(rt).ownerOf(retainedDir(rt.config.runsDir, runId), runId);
  if (owner === "another")
    throw new SandboxRefusedError(
      `${runId} is retained by another deployment (another SCQ_KEY_PREFIX or Redis), not this one: pin or open it with that deployment's settings`,
    );
  if (owner === "unknown")
    throw new SandboxRefusedError(
      `${runId} was retained before deployments were marked, by a run this deployment's Redis does not know: pin or open it with the settings of the deployment that ran it`,
    );
  const expiry = expiresAt(meta, windowMs(rt));
  if (expiry <= Date.now())
    throw new SandboxRefusedError(`${runId} expired at ${new Date(expiry).toISOString()}: its workspace is due to be removed and cannot be opened or pinned`);
  return meta;
}

async function pin(rt: Runtime, meta: RetainedMeta): Promise<RetainedMeta> {
  const next = pinned(meta, rt.config.SANDBOX_PIN_DAYS, Date.now());
  // The expiry on disk first: a reap that runs meanwhile reads it and waits for the new time.
  await writeMeta(rt.config.runsDir, next);
  await scheduleReap(rt.queues.sandboxRetention, { run_id: next.run_id }, expiresAt(next, windowMs(rt)));
  return next;
}

export async function sandboxPinCommand(rt: Runtime, runId: string): Promise<number> {
  const next = await pin(rt, await liveRun(rt, runId));
  process.stdout.write(`${next.run_id} pinned until ${next.pinned_until}\n`);
  return 0;
}

/** Checked before anything else: a shell needs a terminal, and docker's own complaint would not say why. */
export function refuseWithoutTerminal(): void {
  if (!process.stdin.isTTY || !process.stdout.isTTY) {
    throw new SandboxRefusedError(
      "sandbox open needs a terminal: it starts an interactive shell, so stdin and stdout must be a TTY (not a pipe, a script or CI)",
    );
  }
}

export async function sandboxOpenCommand(rt: Runtime, runIdInput: string, opts: { publish?: string; pin?: boolean; allow?: string[] }): Promise<number> {
  const runId = parseRunId(runIdInput);
  const publish: Publish | undefined = opts.publish !== undefined ? parsePublish(opts.publish) : undefined;
  // The session's egress: the runs' allowlist, and what the operator adds for this session (ADR 0035).
  const extra = (opts.allow ?? []).map((entry) => {
    const rule = parseRule(entry);
    if ("problem" in rule) throw new InvalidInputError("--allow", rule.problem);
    return rule;
  });
  let meta = await liveRun(rt, runId);
  const sandboxes = liveness(rt);
  const engine = containerEngine(meta.provider);
  const cli = sandboxes.clis.find((c) => c.engine === engine) ?? sandboxes.clis[0];
  if (cli === undefined) throw new SandboxRefusedError("sandbox open needs docker or podman on PATH (or SANDCASTLE_CONTAINER_CLI)");
  const open = (await sandboxes.openSandboxes()).get(meta.run_id);
  if (open !== undefined)
    throw new SandboxRefusedError(`a sandbox for ${meta.run_id} is already open: ${open} attach ${sandboxName(meta.run_id)} (or exit that shell first)`);
  // Pinned before the shell opens: a session that ends with a closed laptop still keeps the workspace.
  if (opts.pin) meta = await pin(rt, meta);
  const dir = retainedDir(rt.config.runsDir, meta.run_id);
  const socketDir = await mkdtemp(join(tmpdir(), "scq-sandbox-egress-"));
  const proxy = await EgressProxy.listen(join(socketDir, "egress.sock"), {
    rules: [...rt.config.SANDCASTLE_EGRESS_ALLOW, ...extra],
    hosts: new Map(Object.entries(rt.config.egressHosts)),
    onDecision: () => {},
  });
  const args = sandboxRunArgs({
    engine: cli.engine,
    runId: meta.run_id,
    image: meta.image,
    user: meta.user,
    limits: { memory: rt.config.SANDCASTLE_CONTAINER_MEMORY, cpus: rt.config.SANDCASTLE_CONTAINER_CPUS, pids: rt.config.SANDCASTLE_CONTAINER_PIDS },
    rootless: cli.engine === "podman" && process.getuid?.() !== 0,
    workspace: join(dir, WORKSPACE_DIR),
    jobDir: join(dir, JOB_DIR),
    worktreePath: meta.worktree_path,
    term: process.env.TERM,
    idleMinutes: rt.config.SANDBOX_IDLE_MINUTES,
    egress: { socket: proxy.socketPath },
    mainDir: containerMainDir(),
  });
  const published = publish !== undefined ? await publishIntoContainer(cli, sandboxName(meta.run_id), publish) : undefined;
  // The engine's own env only (PATH, HOME, CONTAINERS_CONF, …): the operator's shell variables stay here.
  // Its stderr passes through us: with -t the shell's output goes to the terminal, so what comes here is the
  // engine's own, kept (its end) to say what to set when the engine could not start the container.
  const child = spawn(cli.path, args, { stdio: ["inherit", "inherit", "pipe"], env: { ...cli.env } });
  let engineSaid = "";
  child.stderr!.on("data", (chunk: Buffer) => {
    process.stderr.write(chunk);
    engineSaid = (engineSaid + chunk.toString()).slice(-ENGINE_STDERR_KEPT);
  });
  const code = await new Promise<number>((resolve) => {
    child.once("error", (err) => {
      process.stderr.write(`sandcastle-queue: could not start ${cli.engine}: ${err.message}\n`);
      resolve(1);
    });
    child.once("close", (exit, signal) => resolve(exit ?? (signal !== null ? 1 : 0)));
  });
  published?.close();
  await proxy.close();
  await rm(socketDir, { recursive: true, force: true });
  const hint = engineRefusalHint(cli.engine, code, engineSaid, cli.env.CONTAINERS_CONF);
  if (hint !== null) process.stderr.write(`sandcastle-queue: ${hint}\n`);
  return code;
}

/** How much of the engine's stderr is kept to read its refusal from. */
const ENGINE_STDERR_KEPT = 4096;
