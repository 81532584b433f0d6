// The sandcastle-run contract (seed: sandcastle-runner SandcastleRunRequest / SandcastleRunResult).
// One source of truth: queues/, workers/ and the child program all parse with these schemas.
import { isAbsolute } from "node:path";
import { z } from "zod";
import { FAILURE_REASONS, SKIP_REASONS, type SkipReason } from "../audit/vocabulary.js";
import { credentialValueProblem, secretNameProblem } from "./plain-setting.js";

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
export const MAX_PARALLEL_IMPLEMENTERS = 8;

// The closed sets live in the audit vocabulary (a leaf every domain imports); re-exported here.
export { FAILURE_REASONS, SKIP_REASONS, type FailureReason, type SkipReason } from "../audit/vocabulary.js";

const absolutePath = (field: string) =>
  z
    .string({ error: `${field} must be a string holding an absolute path` })
    .min(1, `${field} must not be empty`)
    .refine((p) => isAbsolute(p), { message: `${field} must be an absolute path (got a relative one)` });

/** A plain file name: no path separators, no `..`, not empty. */
export const PlainName = z
  .string()
  .regex(/^[A-Za-z0-9][A-Za-z0-9._-]{0,127}$/, "must be a plain name: letters, digits, '.', '_', '-' (no '/', no '..', not empty)")
  .refine((s) => !s.includes(".."), "must not contain '..'");

/** A branch name git accepts and a shell cannot misread (subset of `git check-ref-format --branch`). */
export const BranchName = z
  .string()
  .min(1, "must not be empty")
  .max(200, "must be at most 200 characters")
  .regex(/^[A-Za-z0-9][A-Za-z0-9._\/-]*$/, "may hold only letters, digits, '.', '_', '-', '/' and must start with a letter or digit")
  .refine((b) => !b.includes("..") && !b.includes("//") && !b.endsWith("/") && !b.endsWith(".") && !b.endsWith(".lock") && !b.includes("/.") && !b.includes("@{"), "is not a valid git branch name (no '..', '//', '/.', trailing '/', '.' or '.lock')");

export const EnvVarName = z.string().regex(/^[A-Za-z_][A-Za-z0-9_]*$/, "must be an environment variable name ([A-Za-z_][A-Za-z0-9_]*)");


/** An image reference as docker and podman take it (`localhost/name:tag`, `registry:5000/a/b@sha256:…`); never an option. */
export const ImageRef = z
  .string()
  .max(512, "must be at most 512 characters")
  .regex(/^[A-Za-z0-9][A-Za-z0-9._\/:@-]*$/, "must be an image reference such as localhost/sandcastle-queue-agent:latest (letters, digits, '.', '_', '-', '/', ':', '@')");

const SANDBOX_CHOICES = `must be one of ${SANDBOXES.join(", ")}, or "custom:<name>"`;

const CustomSandbox = z
  .string({ error: SANDBOX_CHOICES })
  .startsWith(CUSTOM_SANDBOX_PREFIX, { error: SANDBOX_CHOICES })
  .refine((s) => PlainName.safeParse(s.slice(CUSTOM_SANDBOX_PREFIX.length)).success, `a custom sandbox is "custom:<name>" with a plain name: letters, digits, '.', '_', '-' (no '/', no '..')`);

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
    /** Container network: "default" (the engine's bridge; agents call model APIs) or "none". Never the host's. */
    network: z.enum(["default", "none"]).default("default"),
    prompt_template_dir: absolutePath("prompt_template_dir"),
    branch: BranchName,
    repo_workdir: absolutePath("repo_workdir"),
    env_manifest_name: PlainName,
    parallel_implementers: z.number().int("must be a whole number").min(1).max(MAX_PARALLEL_IMPLEMENTERS).default(1),
    timeout_minutes: z
      .number()
      .positive("must be greater than 0")
      .max(MAX_TIMEOUT_MINUTES, `must be at most ${MAX_TIMEOUT_MINUTES}`)
      .default(30),
    /** Plain settings only (plain-setting.ts): job data is stored in Redis and shown in Bull Board. */
    extra_env: z
      .record(EnvVarName, z.string().max(4096, "must be at most 4096 characters"))
      .superRefine((env, ctx) => {
        for (const [name, value] of Object.entries(env)) {
          const problem = secretNameProblem(name) ?? credentialValueProblem(value);
          if (problem !== null) ctx.addIssue({ code: "custom", path: [name], message: problem });
        }
      })
      .default({}),
    dry_run: z.boolean().default(false),
    /** "wait" (default): a job above the cap waits its turn; "skip": answer skipped/concurrency_cap at once. */
    on_capacity: z.enum(["wait", "skip"]).default("wait"),
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
  });
export type SandcastleRunRequest = z.infer<typeof SandcastleRunRequest>;
export type SandcastleRunRequestInput = z.input<typeof SandcastleRunRequest>;

export function customProviderName(sandbox: SandboxField): string | undefined {
  return sandbox.startsWith(CUSTOM_SANDBOX_PREFIX) ? sandbox.slice(CUSTOM_SANDBOX_PREFIX.length) : undefined;
}

/**
 * The sandbox a run really uses: dry_run forces noSandbox for the built-in sandboxes (the seed's rule);
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
  })
  .strict();
export type SandcastleRunResult = z.infer<typeof SandcastleRunResult>;

/** Env manifest `ENV_MANIFEST_DIR/<name>.json`: names only, values come from the worker's env. */
export const EnvManifest = z
  .object({
    project_slug: z.string().min(1),
    vars: z.array(EnvVarName),
  })
  .strict();
export type EnvManifest = z.infer<typeof EnvManifest>;

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
  })
  .strict();
export type SandboxSettings = z.infer<typeof SandboxSettings>;

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
  })
  .strict();
export type ChildConfig = z.infer<typeof ChildConfig>;

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
