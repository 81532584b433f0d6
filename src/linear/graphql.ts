// A small client for Linear's GraphQL API (POST LINEAR_API_URL, JSON {query, variables,
// operationName}; a personal API key goes in `Authorization: <key>`, an OAuth token as
// `Authorization: Bearer <token>`). Answers are {data, errors?}; errors carry `extensions`
// (code RATELIMITED when throttled). What is worth retrying is decided here, once:
//   retryable  HTTP 429, 5xx, 408, a RATELIMITED error, a timeout, a network failure
//   final      401/403 and authentication errors, other GraphQL errors (a bad query or input)
// Reads are retried here with exponential backoff and jitter. A write whose outcome is unknown
// (timeout, 5xx) is NOT retried here: the caller looks before it writes again (issues.ts).
import type { Logger } from "../log.js";
import { LinearError } from "../errors.js";

export { LinearError };

export interface LinearClientOptions {
  readonly url: string;
  readonly apiKey: string;
  readonly timeoutMs: number;
  readonly log: Logger;
  /** Attempts per read (1 = no retry). */
  readonly attempts?: number;
  readonly baseDelayMs?: number;
  readonly maxDelayMs?: number;
  readonly fetch?: typeof fetch;
}

interface GraphQLAnswer<T> {
  data?: T | null;
  errors?: Array<{ message?: string; extensions?: { code?: string; type?: string; userPresentableMessage?: string } }>;
}

export class LinearGraphQL {
  private readonly fetchImpl: typeof fetch;
  readonly attempts: number;
  private readonly baseDelayMs: number;
  private readonly maxDelayMs: number;

  constructor(private readonly options: LinearClientOptions) {
    this.fetchImpl = options.fetch ?? fetch;
    this.attempts = options.attempts ?? 4;
    this.baseDelayMs = options.baseDelayMs ?? 500;
    this.maxDelayMs = options.maxDelayMs ?? 8000;
  }

  /** A read: retried with backoff while the failure is retryable. */
  async query<T>(operationName: string, query: string, variables: Record<string, unknown> = {}): Promise<T> {
    for (let attempt = 1; ; attempt++) {
      try {
        return await this.once<T>(operationName, query, variables);
      } catch (err) {
        if (!(err instanceof LinearError) || !err.retryable || attempt >= this.attempts) throw err;
        await this.backoff(attempt, err, operationName);
      }
    }
  }

  /** A write: sent once; only a refusal that certainly did nothing (429, RATELIMITED) is retried here. */
  async mutate<T>(operationName: string, query: string, variables: Record<string, unknown>): Promise<T> {
    for (let attempt = 1; ; attempt++) {
      try {
        return await this.once<T>(operationName, query, variables);
      } catch (err) {
        if (!(err instanceof LinearError) || !err.retryable || err.outcomeUnknown || attempt >= this.attempts) throw err;
        await this.backoff(attempt, err, operationName);
      }
    }
  }

  async backoff(attempt: number, err: LinearError, operationName: string): Promise<void> {
    const exp = Math.min(this.maxDelayMs, this.baseDelayMs * 2 ** (attempt - 1));
    const wait = err.retryAfterMs !== null ? Math.min(this.maxDelayMs * 4, err.retryAfterMs) : exp / 2 + Math.random() * (exp / 2);
    this.options.log.warn({ operation: operationName, attempt, wait_ms: Math.round(wait), reason: err.message }, "linear request failed; retrying");
    await new Promise((r) => setTimeout(r, wait));
  }

  private async once<T>(operationName: string, query: string, variables: Record<string, unknown>): Promise<T> {
    let res: Response;
    try {
      res = await this.fetchImpl(this.options.url, {
        method: "POST",
        headers: { "content-type": "application/json", authorization: this.options.apiKey },
        body: JSON.stringify({ query, variables, operationName }),
        signal: AbortSignal.timeout(this.options.timeoutMs),
      });
    } catch (err) {
      const timedOut = (err as Error).name === "TimeoutError";
      throw new LinearError(`linear ${operationName} ${timedOut ? `timed out after ${this.options.timeoutMs} ms` : "could not connect"}`, true, timedOut);
    }
    let answer: GraphQLAnswer<T> = {};
    try {
      answer = (await res.json()) as GraphQLAnswer<T>;
    } catch {
      // not JSON (a proxy's error page): judged by the status alone
    }
    const codes = (answer.errors ?? []).map((e) => (e.extensions?.code ?? e.extensions?.type ?? "").toUpperCase());
    const firstMessage = (answer.errors?.[0]?.extensions?.userPresentableMessage ?? answer.errors?.[0]?.message ?? res.statusText ?? "").slice(0, 200);
    if (res.status === 429 || codes.includes("RATELIMITED")) {
      const retryAfter = Number(res.headers.get("retry-after"));
      throw new LinearError(`linear ${operationName} rate limited`, true, false, Number.isFinite(retryAfter) && retryAfter > 0 ? retryAfter * 1000 : null);
    }
    if (res.status === 401 || res.status === 403 || codes.some((c) => c.includes("AUTHENTICATION") || c === "FORBIDDEN")) {
      throw new LinearError(`linear ${operationName} refused the API key (${res.status}): check LINEAR_API_KEY`, false);
    }
    if (res.status >= 500 || res.status === 408) {
      throw new LinearError(`linear ${operationName} failed: HTTP ${res.status}`, true, true);
    }
    if (answer.errors && answer.errors.length > 0) {
      throw new LinearError(`linear ${operationName} failed: ${firstMessage}`, false);
    }
    if (!res.ok || answer.data === undefined || answer.data === null) {
      throw new LinearError(`linear ${operationName} failed: HTTP ${res.status}`, res.status >= 500);
    }
    return answer.data;
  }
}
