// Errors the program explains to an operator: each has a `kind` from a closed set and a message that says how to fix it.

export type AppErrorKind =
  | "config_invalid"
  | "redis_unavailable"
  | "redis_not_installed"
  | "redis_eviction_policy"
  | "embedded_redis_failed"
  | "invalid_input"
  | "http_unsafe_bind";

export class AppError extends Error {
  constructor(
    readonly kind: AppErrorKind,
    message: string,
  ) {
    super(message);
    this.name = "AppError";
  }
}
