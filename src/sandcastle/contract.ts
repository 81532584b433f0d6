// The sandcastle-run contract: SandcastleRunRequest / SandcastleRunResult (docs/contracts.md).
// One source of truth: queues/, workers/ and the child program all parse with these schemas.
import { z } from "zod";
import { FAILURE_REASONS, SKIP_REASONS, type SkipReason } from "../audit/vocabulary.js";
import { credentialValueProblem, secretNameProblem } from "./plain-setting.js";
import { EgressEntry } from "./egress/allowlist.js";

export const AGENTS = ["claudeCode", "codex", "pi", "opencode", "script"] as const;
export const SANDBOXES = ["docker", "podman", "vercel", "daytona", "noSandbox"] as const;
/** Sandboxes run by our own container provider (src/sandcastle/child/container-provider.ts). */
export const CONTAINER_SANDBOXES = ["docker", "podman"] as const;
export type ContainerEngine = (typeof CONTAINER_SANDBOXES)[number];
/** `custom:<name>`: the module `<name>.js` / `<name>.mjs` in SANDCASTLE_PROVIDERS_DIR. */
export const CUSTOM_SANDBOX_PREFIX = "custom:";
export const RUN_STATUSES = ["ok", "failed", "timeout", "killed", "skipped"] as const;

/** Upper bound of `timeout_minutes`: 4 h; an agent run longer than that is a runaway, not work. */
export const MAX_TIMEOUT_MINUTES = 240;
/** A run stopped (timeout, cancel, kill switch) gets SIGTERM, then this long, then SIGKILL. */
export const KILL_GRACE_MS = 5000;
export const MAX_PARALLEL_IMPLEMENTERS = 8;

// The closed sets live in the audit vocabulary (a leaf every domain imports); re-exported here.
export { FAILURE_REASONS, SKIP_REASONS, type FailureReason, type SkipReason } from "../audit/vocabulary.js";

// Rules are regexes where a regex can say them, so the JSON Schemas (GET /v1/schemas, the OpenAPI document)
// hold them as patterns and a client's validator refuses what the server refuses.

/** Absolute on the POSIX hosts the service runs on (path.isAbsolute there: a leading "/"). */
const absolutePath = (field: string) =>
  z
    .string({ error: `${field} must be a string holding an absolute path` })
    .min(1, `${field} must not be empty`)
    .regex(/^\//, `${field} must be an absolute path (got a relative one)`);

const PLAIN_NAME = /^(?!.*\.\.)[A-Za-z0-9][A-Za-z0-9._-]{0,127}$/;
const PLAIN_NAME_WORDS = "letters, digits, '.', '_', '-' (no '/', no '..')";

/** A plain file name: no path separators, no `..`, not empty. */
export const PlainName = z.string().regex(PLAIN_NAME, `must be a plain name: ${PLAIN_NAME_WORDS}, not empty`);

/** A branch name git accepts and a shell cannot misread (subset of `git check-ref-format --branch`). */
export const BranchName = z
  .string()
  .min(1, "must not be empty")
  .max(200, "must be at most 200 characters")
  .regex(/^[A-Za-z0-9][A-Za-z0-9._\/-]*$/, "may hold only letters, digits, '.', '_', '-', '/' and must start with a letter or digit")
  // No "..", "//", "/.", and no trailing "/", "." or ".lock" (the charset above already keeps "@{" out).
  .regex(/^(?!.*\.\.)(?!.*\/\/)(?!.*\/\.)(?!.*\.lock$)(?!.*[/.]$)/, "is not a valid git branch name (no '..', '//', '/.', trailing '/', '.' or '.lock')");

export const EnvVarName = z.string().regex(/^[A-Za-z_][A-Za-z0-9_]*$/, "must be an environment variable name ([A-Za-z_][A-Za-z0-9_]*)");


/** An image reference as docker and podman take it (`localhost/name:tag`, `registry:5000/a/b@sha256:…`); never an option. */
export const ImageRef = z
  .string()
  .max(512, "must be at most 512 characters")
  .regex(/^[A-Za-z0-9][A-Za-z0-9._\/:@-]*$/, "must be an image reference such as localhost/sandcastle-queue-agent:latest (letters, digits, '.', '_', '-', '/', ':', '@')");

/**
 * A container network as docker and podman take it: a network's name, or `container:<name>` to join another
 * container's namespace (a model proxy, a gateway sidecar). Never the host's, and never a path to a namespace.
 */
export const ContainerNetwork = z
  .string()
  .regex(/^(container:)?[A-Za-z0-9][A-Za-z0-9_.-]{0,127}$/, { error: "takes a network name or container:<name> (letters, digits, '.', '_', '-')", abort: true })
  .refine((n) => n !== "host", "takes a network name or container:<name>, never host: a run never shares the host's network");
export type ContainerNetwork = z.infer<typeof ContainerNetwork>;

const SANDBOX_CHOICES = `must be one of ${SANDBOXES.join(", ")}, or "custom:<name>"`;

const CustomSandbox = z
  .string({ error: SANDBOX_CHOICES })
  .startsWith(CUSTOM_SANDBOX_PREFIX, { error: SANDBOX_CHOICES, abort: true })
  .regex(new RegExp(`^${CUSTOM_SANDBOX_PREFIX}${PLAIN_NAME.source.slice(1)}`), `a custom sandbox is "custom:<name>" with a plain name: ${PLAIN_NAME_WORDS}`);

export const SandboxField = z.union([z.enum(SANDBOXES), CustomSandbox], { error: SANDBOX_CHOICES });
export type SandboxField = z.infer<typeof SandboxField>;

/** Session ids become Redis key parts and file names: keep them plain. */
export const SessionId = z.string().regex(/^[A-Za-z0-9][A-Za-z0-9._-]{0,127}$/, "must be 1-128 letters, digits, '.', '_', '-'");

export const SandcastleRunRequest = z
  .object({
    session_id: SessionId,
    agent: z.enum(AGENTS).default("claudeCode"),
    /** Optional model for the agent; each agent has a documented default. */
    model: z.string().min(1).max(200).optional(),
    sandbox: SandboxField.default("docker"),
    /** The container image for docker / podman; unset: SANDCASTLE_IMAGE. */
    image: ImageRef.optional(),
    /**
     * Container network (docker/podman): "default" — no network of its own, only the hosts the egress policy allows
     * (ADR 0035); "none" — nothing at all; "open" — the engine's bridge, any host (only where SANDCASTLE_EGRESS_OPEN=1).
     * Never the host's.
     */
    network: z.enum(["default", "none", "open"]).default("default"),
    /** The hosts this run may reach, instead of SANDCASTLE_EGRESS_ALLOW: each within SANDCASTLE_EGRESS_PERMIT. */
    egress_allow: z.array(EgressEntry).max(64, "takes at most 64 entries").optional(),
    prompt_template_dir: absolutePath("prompt_template_dir"),
    branch: BranchName,
    repo_workdir: absolutePath("repo_workdir"),
    env_manifest_name: PlainName,
    parallel_implementers: z.number().int("must be a whole number").min(1).max(MAX_PARALLEL_IMPLEMENTERS).default(1),
    timeout_minutes: z.number().positive("must be greater than 0").max(MAX_TIMEOUT_MINUTES, `must be at most ${MAX_TIMEOUT_MINUTES}`).default(30),
    /** Plain settings only (plain-setting.ts): job data is stored in Redis and shown in Bull Board. */
    extra_env: z
      .record(EnvVarName, z.string().max(4096, "must be at most 4096 characters"))
      .superRefine((env, ctx) => {
        for (const [name, value] of Object.entries(env)) {
          const problem = secretNameProblem(name) ?? credentialValueProblem(value);
          if (problem !== null) ctx.addIssue({ code: "custom", path: [name], message: problem });
        }
      })
      .default({})
      .meta({
        description:
          "Plain settings for the agent. A name holding a secret-like word or a value carrying a credential is refused (put those in the env manifest)",
      }),
    dry_run: z.boolean().default(false),
    /** "wait" (default): a job above the cap waits its turn; "skip": answer skipped/concurrency_cap at once. */
    on_capacity: z.enum(["wait", "skip"]).default("wait"),
    /**
     * Tokens the run may use (input + output, cache reads and writes included); past it the run is stopped, killed /
     * budget_exceeded. Unset: SANDCASTLE_TOKEN_BUDGET.
     */
    token_budget: z.number().int("must be a whole number").positive("must be greater than 0").optional(),
  })
  .strict()
  .superRefine((req, ctx) => {
    if (req.sandbox === "noSandbox" && !req.dry_run) {
      ctx.addIssue({
        code: "custom",
        path: ["sandbox"],
        message: 'noSandbox is never used in an autonomy path: use sandbox "docker" or "podman", or set dry_run: true',
      });
    }
  })
  // The rule above, as JSON Schema says it.
  .meta({
    if: { type: "object", properties: { sandbox: { const: "noSandbox" } }, required: ["sandbox"] },
    then: { type: "object", properties: { dry_run: { const: true } }, required: ["dry_run"] },
  });
export type SandcastleRunRequest = z.infer<typeof SandcastleRunRequest>;
export type SandcastleRunRequestInput = z.input<typeof SandcastleRunRequest>;

export function customProviderName(sandbox: SandboxField): string | undefined {
  return sandbox.startsWith(CUSTOM_SANDBOX_PREFIX) ? sandbox.slice(CUSTOM_SANDBOX_PREFIX.length) : undefined;
}

/**
 * The sandbox a run really uses: dry_run forces noSandbox for the built-in sandboxes (a dry run runs on the host);
 * a custom provider is the operator's own code and is used as named, dry or not.
 */
export function effectiveSandbox(request: Pick<SandcastleRunRequest, "sandbox" | "dry_run">): SandboxField {
  if (customProviderName(request.sandbox) !== undefined) return request.sandbox;
  return request.dry_run ? "noSandbox" : request.sandbox;
}

export function containerEngine(sandbox: SandboxField): ContainerEngine | undefined {
  return (CONTAINER_SANDBOXES as readonly string[]).includes(sandbox) ? (sandbox as ContainerEngine) : undefined;
}

export const Commit = z.object({ sha: z.string().regex(/^[0-9a-f]{7,64}$/, "must be a hex commit sha") });

const tokens = z.number().int().nonnegative();
/** Tokens a run's agents reported, summed over phases and implementers (ADR 0034). */
export const RunUsage = z
  .object({
    input_tokens: tokens,
    output_tokens: tokens,
    cache_read_input_tokens: tokens,
    cache_creation_input_tokens: tokens,
    /** Model turns as each agent counts them. */
    turns: tokens,
  })
  .strict();
export type RunUsage = z.infer<typeof RunUsage>;

export const SandcastleRunResult = z
  .object({
    run_id: z.string(),
    status: z.enum(RUN_STATUSES),
    branch: z.string(),
    commits: z.array(Commit),
    merged_branch: z.string().nullable(),
    log_tail: z.array(z.string()),
    duration_seconds: z.number().nonnegative(),
    audit_row_count: z.number().int().nonnegative(),
    skip_reason: z.enum(SKIP_REASONS).nullable(),
    failure_reason: z.enum(FAILURE_REASONS).nullable(),
    exit_code: z.number().int().nullable(),
    /** One line for humans; already redacted. */
    message: z.string().nullable(),
    /**
     * What the agent changed in its own repository beyond the run's branch — other refs, git config, hooks,
     * symlinks in its git dir (ADR 0033). None of it was taken; empty when the agent kept to its branch.
     */
    refused_changes: z.array(z.string()).default([]),
    /** What the agents reported using; null when they report nothing (the `script` agent). */
    usage: RunUsage.nullable().default(null),
    /** The egress policy's decisions (ADR 0035); null when the run had none (network none or open, the operator's network, no container). */
    egress: z
      .object({ allowed: z.number().int().nonnegative(), denied: z.number().int().nonnegative(), denied_hosts: z.array(z.string()) })
      .strict()
      .nullable()
      .default(null),
  })
  .strict();
export type SandcastleRunResult = z.infer<typeof SandcastleRunResult>;

/** The fields of a result of a run that made nothing: no commits, no log, no usage; its status and timing are the caller's. */
type BareResult = Pick<SandcastleRunResult, "run_id" | "branch" | "commits" | "merged_branch" | "log_tail" | "refused_changes" | "usage" | "egress">;

export function bareResult(runId: string, branch: string): BareResult {
  return { run_id: runId, branch, commits: [], merged_branch: null, log_tail: [], refused_changes: [], usage: null, egress: null };
}

/** Env manifest `ENV_MANIFEST_DIR/<name>.json`: names only, values come from the worker's env. */
export const EnvManifest = z
  .object({
    project_slug: z.string().min(1),
    vars: z.array(EnvVarName),
  })
  .strict();
export type EnvManifest = z.infer<typeof EnvManifest>;

/**
 * A container run's way out (ADR 0035): `allowlist` — network none, the egress proxy with these entries (and static
 * name → address entries); `none`; `open` — the engine's bridge; `operator` — SANDCASTLE_CONTAINER_NETWORK, the
 * operator's own control.
 */
export const EgressPolicy = z.discriminatedUnion("mode", [
  z.object({ mode: z.literal("allowlist"), allow: z.array(EgressEntry), hosts: z.record(z.string(), z.string()) }).strict(),
  z.object({ mode: z.literal("none") }).strict(),
  z.object({ mode: z.literal("open") }).strict(),
  z.object({ mode: z.literal("operator"), network: ContainerNetwork }).strict(),
]);
export type EgressPolicy = z.infer<typeof EgressPolicy>;

/** Container sizes: docker/podman `--memory`, `--cpus`, `--pids-limit`. */
export const ContainerLimits = z
  .object({
    memory: z.string().regex(/^[0-9]+[bkmg]?$/i, "must be a size such as 4g or 512m"),
    cpus: z.number().positive().max(1024),
    pids: z.number().int().min(16).max(1_000_000),
  })
  .strict();
export type ContainerLimits = z.infer<typeof ContainerLimits>;

/** What the worker's settings say about sandboxes; the child has no other source (its env is PATH, HOME only). */
export const SandboxSettings = z
  .object({
    /** SANDCASTLE_IMAGE: the image when the request names none. */
    default_image: ImageRef.nullable(),
    /** SANDCASTLE_CONTAINER_CLI: the binary for docker and podman; null: `docker` / `podman` on PATH. */
    container_cli: z.string().min(1).nullable(),
    /** The container engine's own variables (CONTAINERS_CONF, DOCKER_HOST, …): no secrets, paths and addresses. */
    engine_env: z.record(EnvVarName, z.string()),
    limits: ContainerLimits,
    /** Label value naming the deployment that owns a container (key prefix + Redis), for worker-side cleanup. */
    deployment: z.string().min(1).max(512),
    /** SANDCASTLE_PROVIDERS_DIR: where `custom:<name>` modules live. */
    providers_dir: z.string().min(1).nullable(),
    /** SANDCASTLE_CONTAINER_NETWORK: the run containers' network instead of the engine's bridge (a request's "none" still wins). */
    network: ContainerNetwork.nullable().default(null),
    /** SANDCASTLE_AGENT_IDLE_SECONDS: an agent silent this long is stopped. */
    agent_idle_seconds: z.number().int().positive().default(600),
  })
  .strict();
export type SandboxSettings = z.infer<typeof SandboxSettings>;

/**
 * What a spare child (started ahead with `--config-on-stdin`, child-spare.ts) reads as a line of its stdin: its run's
 * config file and the directory the run works in (a spare starts elsewhere). Paths only, never a secret. `warm`: the
 * worker moved the spare's directories to the run's, and its warm container may be the run's (ADR 0053).
 */
export const SpareHandoff = z.object({ config: z.string().min(1), cwd: z.string().min(1), warm: z.literal(true).optional() }).strict();
export type SpareHandoff = z.infer<typeof SpareHandoff>;

/**
 * The 0600 config file the worker writes for the child (`--config <path>`).
 * The only channel through which secret values reach the child.
 */
export const ChildConfig = z
  .object({
    version: z.literal(1),
    run_id: z.string().min(1),
    request: SandcastleRunRequest,
    /** Resolved manifest values + extra_env, handed to the agent provider's `env`. */
    env: z.record(EnvVarName, z.string()),
    /** Absent in configs written by other tools: container sandboxes then fail provider_unavailable. */
    sandbox_settings: SandboxSettings.optional(),
    /** RUNS_DIR/<run_id>/agent: where docker/podman runs keep the agent's own repositories (ADR 0033). */
    work_dir: z.string().min(1).optional(),
    /** How a docker/podman run's containers reach the network (ADR 0035); absent: the engine's bridge. */
    egress: EgressPolicy.optional(),
    /**
     * The run's deadline plus the kill grace: by then the worker has killed the run. A run container's main
     * process ends itself at this time, whatever becomes of the worker and the child. Absent in configs other
     * tools write: the child's start + timeout_minutes + the grace.
     */
    ends_by: z.iso.datetime().optional(),
  })
  .strict();
export type ChildConfig = z.infer<typeof ChildConfig>;

/**
 * A spare child's first line when its worker wants a warm container (ADR 0053): the deployment's last container run's
 * config with no env (its run id, work_dir and ends_by the spare's own), the spare's directory in SANDCASTLE_CONFIG_DIR,
 * and the worker it waits for. Its run's hand-over line comes next.
 */
export const SpareWarmth = z
  .object({ warm: z.object({ config: ChildConfig, run_dir: z.string().min(1), spare_of: z.string().min(1) }).strict() })
  .strict();
export type SpareWarmth = z.infer<typeof SpareWarmth>;

/** In a ChildConfig's work_dir: the agent's repository of the run's own branch after its last phase, for the retained workspace. */
export const AGENT_WORKSPACE = "workspace";

/** What the child reports on its last line: `{"type":"run_complete","result":{...}}`. */
export const ChildRunComplete = z.object({
  type: z.literal("run_complete"),
  result: z
    .object({
      branch: z.string(),
      commits: z.array(Commit),
      merged_branch: z.string().nullable(),
      status: z.enum(["ok", "failed"]),
      failure_reason: z.enum(FAILURE_REASONS).nullable().optional(),
      message: z.string().nullable().optional(),
      refused_changes: z.array(z.string()).optional(),
    })
    .strict(),
});
export type ChildRunComplete = z.infer<typeof ChildRunComplete>;

/** A run's phases, in order; a job's progress is `{phase}` (a job with no progress yet is queued). */
export const RUN_PHASES = ["queued", "preflight", "running", "collecting", "done"] as const;
export type RunPhase = (typeof RUN_PHASES)[number];
export const RunProgress = z.object({ phase: z.enum(RUN_PHASES), at: z.string() }).strict();
export type RunProgress = z.infer<typeof RunProgress>;

/** Why a run was skipped, for the result's one human line. */
export const SKIP_MESSAGES: Record<SkipReason, string> = {
  kill_switch_active: "the kill switch is on (sandcastle-queue killswitch status); nothing was launched",
  sandcastle_disabled: "runs are disabled on this worker: set TAO_SANDCASTLE_ENABLED=1 and restart it; nothing was launched",
  concurrency_cap: "all run slots are taken; retry next cycle",
};
