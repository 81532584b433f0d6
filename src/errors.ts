// Every error the program explains to an operator, in one place: each has a `kind` from a closed set,
// typed context, and a message that says what to fix. Processors map them to BullMQ's
// UnrecoverableError / retries; the CLI prints `sandcastle-queue: <message>`.

export type AppErrorKind =
  | "config_invalid"
  | "redis_unavailable"
  | "redis_credentials_refused"
  | "redis_not_installed"
  | "redis_eviction_policy"
  | "embedded_redis_failed"
  | "invalid_input"
  | "http_unsafe_bind"
  | "http_port_in_use"
  | "env_manifest_invalid"
  | "capacity_full"
  | "review_channel_failed"
  | "linear_failed"
  | "margot_bridge_failed"
  | "projects_config_invalid"
  | "sandbox_refused"
  | "audit_unwritable";

export class AppError extends Error {
  constructor(
    readonly kind: AppErrorKind,
    message: string,
    /** false: retrying cannot help (bad configuration, bad input); an operator must act. */
    readonly retryable = false,
  ) {
    super(message);
    this.name = new.target.name;
  }
}

/** Bad settings: every problem at once, each naming its variable (never its value). */
export class ConfigError extends AppError {
  constructor(readonly problems: readonly string[]) {
    super("config_invalid", `invalid configuration: ${problems.join("; ")}`);
  }
}

/** One field's problem, for answers that list them (HTTP 400). */
export interface FieldProblem {
  readonly field: string;
  readonly problem: string;
}

/** Bad input at a boundary (CLI, HTTP, job payload): names every field and what it takes. */
export class InvalidInputError extends AppError {
  readonly problems: readonly FieldProblem[];
  constructor(
    readonly what: string,
    readonly details: string,
    problems?: readonly FieldProblem[],
  ) {
    super("invalid_input", `invalid ${what}: ${details}`);
    this.problems = problems ?? [{ field: "(top level)", problem: details }];
  }
}

export class EnvManifestError extends AppError {
  constructor(message: string) {
    super("env_manifest_invalid", message);
  }
}

/** All run slots are taken and the request said "wait": the processor re-queues the job for a moment. */
export class CapacityFullError extends AppError {
  constructor() {
    super("capacity_full", "all run slots are taken", true);
  }
}

/** A review channel failure; `retryable` false means retrying cannot help (bad token, unknown chat). */
export class ReviewChannelError extends AppError {
  constructor(message: string, retryable: boolean) {
    super("review_channel_failed", message, retryable);
  }
}

export class LinearError extends AppError {
  constructor(
    message: string,
    retryable: boolean,
    /** true when the request may have been carried out (a timeout or 5xx after sending). */
    readonly outcomeUnknown = false,
    /** The server's Retry-After, when it gave one. */
    readonly retryAfterMs: number | null = null,
  ) {
    super("linear_failed", message, retryable);
  }
}

/** A Margot failure retrying cannot fix (missing configuration); the job fails at once with this message. */
export class BridgeError extends AppError {
  constructor(message: string) {
    super("margot_bridge_failed", message);
  }
}

/** A broken projects file: retrying cannot fix it, an operator must. */
export class ProjectsConfigError extends AppError {
  constructor(message: string) {
    super("projects_config_invalid", message);
  }
}

/** `sandbox open` / `pin` said no (no terminal, already open, unknown or expired run): one line, exit 1. */
export class SandboxRefusedError extends AppError {
  constructor(message: string) {
    super("sandbox_refused", message);
  }
}

/** An audit row could not be written (ENOSPC, ENOTDIR, EACCES…): nothing that needs its row may go ahead. */
export class AuditUnwritableError extends AppError {
  constructor(
    readonly path: string,
    cause: unknown,
  ) {
    super("audit_unwritable", `the audit log (AUDIT_LOG_PATH) ${path} cannot be written: ${cause instanceof Error ? cause.message : String(cause)}`, true);
  }
}
