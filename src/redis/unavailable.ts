// Errors that mean Redis could not be reached (as opposed to a command Redis refused): an HTTP caller gets 503.
const UNREACHABLE = [/Connection is closed/, /Stream isn't writeable/, /max retries per request/i, /\b(ECONNREFUSED|ECONNRESET|EPIPE|ETIMEDOUT)\b/];

export function isRedisUnavailable(err: unknown): boolean {
  const message = err instanceof Error ? err.message : "";
  return UNREACHABLE.some((re) => re.test(message));
}

export const REDIS_UNAVAILABLE_MESSAGE =
  "Redis cannot be reached, so the request was not carried out (had Redis gone away mid-request, its one write may have landed whole); " +
  "retry once it is back: with the same Idempotency-Key a retry never makes a second job";
