// Where Redis is: a URL given by the operator, or the unix socket of the embedded server.
import type { RedisOptions } from "ioredis";

export type RedisTarget = { readonly kind: "url"; readonly url: string } | { readonly kind: "socket"; readonly path: string };

/** For humans and `status`: the URL with any password masked. */
export function describeTarget(target: RedisTarget): string {
  if (target.kind === "socket") return `unix://${target.path}`;
  try {
    const u = new URL(target.url);
    if (u.password) u.password = "***";
    if (u.username && !u.password) u.username = "***";
    return u.toString();
  } catch {
    return "redis://(unparseable URL)";
  }
}

/**
 * Who holds a connection. `worker`: retries forever (BullMQ requires maxRetriesPerRequest null).
 * `producer` (a CLI command): gives up fast, so an enqueue against a dead Redis fails loudly instead of hanging.
 * `server` (the HTTP side of a long-running process): reconnects forever, but while Redis is away a command
 * fails at once rather than waiting in a queue, where it would run (enqueue a job) long after its request was answered.
 */
export type RedisRole = "worker" | "producer" | "server";

export function redisOptions(target: RedisTarget, role: RedisRole): RedisOptions {
  const base: RedisOptions =
    target.kind === "socket" ? { path: target.path } : urlOptions(target.url);
  if (role === "worker") return { ...base, maxRetriesPerRequest: null, enableReadyCheck: true };
  if (role === "server") return { ...base, maxRetriesPerRequest: 0, enableOfflineQueue: false, enableReadyCheck: true };
  return {
    ...base,
    maxRetriesPerRequest: 1,
    connectTimeout: 3000,
    enableOfflineQueue: true,
    retryStrategy: (times) => (times > 2 ? null : 200 * times),
  };
}

function urlOptions(url: string): RedisOptions {
  const u = new URL(url);
  const db = u.pathname.length > 1 ? Number(u.pathname.slice(1)) : 0;
  const options: RedisOptions = {
    host: u.hostname.replace(/^\[|\]$/g, ""),
    port: u.port ? Number(u.port) : 6379,
    db: Number.isFinite(db) ? db : 0,
  };
  if (u.username) options.username = decodeURIComponent(u.username);
  if (u.password) options.password = decodeURIComponent(u.password);
  if (u.protocol === "rediss:") options.tls = {};
  return options;
}
