// The services (`start`, `worker`, `serve`) running for a deployment, as each announces itself in Redis while it
// runs: one field of `{prefix}:services` per process, `<host>/<pid>` → {pid, host, parts, url, redis, started_at,
// seen_at}. A second `start` whose port is taken reads it to name the live service and its URL, instead of failing
// with a raw EADDRINUSE once its workers had already joined.
// Liveness: on this machine, the pid; elsewhere, `seen_at`, which a service renews every minute. A record of a
// process that died without its teardown (SIGKILL) is removed by the next reader.
import { hostname } from "node:os";
import type { RedisClient } from "../redis/connect.js";
import { processAlive } from "../redis/process-alive.js";

const RENEW_MS = 60_000;
/** A record of another machine not renewed for this long is a dead service's. */
const STALE_MS = 5 * RENEW_MS;

export interface ServiceRecord {
  readonly pid: number;
  readonly host: string;
  /** "workers + http", "workers", "http". */
  readonly parts: string;
  /** The HTTP server's URL; null for workers only. */
  readonly url: string | null;
  /** The Redis it serves, as `status` shows it (a password masked). */
  readonly redis: string;
  readonly started_at: string;
  readonly seen_at: string;
}

const servicesKey = (prefix: string) => `${prefix}:services`;

/** Writes this process's record and renews it; the returned teardown removes it. */
export async function announceService(
  redis: RedisClient,
  prefix: string,
  record: Omit<ServiceRecord, "pid" | "host" | "started_at" | "seen_at">,
): Promise<() => Promise<void>> {
  const field = `${hostname()}/${process.pid}`;
  const startedAt = new Date().toISOString();
  const write = () =>
    redis.hset(
      servicesKey(prefix),
      field,
      JSON.stringify({ pid: process.pid, host: hostname(), ...record, started_at: startedAt, seen_at: new Date().toISOString() } satisfies ServiceRecord),
    );
  await write();
  const timer = setInterval(() => void write().catch(() => {}), RENEW_MS);
  timer.unref();
  return async () => {
    clearInterval(timer);
    await redis.hdel(servicesKey(prefix), field);
  };
}

/** The live services of this deployment on this machine, oldest first; dead records (any machine's) are removed. */
export async function liveServicesHere(redis: RedisClient, prefix: string, now = Date.now()): Promise<ServiceRecord[]> {
  const here = hostname();
  const live: ServiceRecord[] = [];
  const dead: string[] = [];
  for (const [field, text] of Object.entries(await redis.hgetall(servicesKey(prefix)))) {
    let record: ServiceRecord;
    try {
      record = JSON.parse(text) as ServiceRecord;
    } catch {
      dead.push(field);
      continue;
    }
    if (record.host === here) {
      if (processAlive(record.pid) && record.pid !== process.pid) live.push(record);
      else if (record.pid !== process.pid) dead.push(field);
    } else if (now - Date.parse(record.seen_at) > STALE_MS) {
      dead.push(field);
    }
  }
  if (dead.length > 0) await redis.hdel(servicesKey(prefix), ...dead);
  return live.sort((a, b) => a.started_at.localeCompare(b.started_at));
}
