// Resolve which Redis this process talks to, open connections to it, and refuse a Redis that can evict jobs.
import type { ConnectionOptions } from "bullmq";
import { Cluster, Redis } from "./ioredis.js";
import { AppError } from "../errors.js";
import type { Logger } from "../log.js";
import { EmbeddedRedis } from "./embedded.js";
import { assertNoEviction } from "./eviction-policy.js";
import { clusterOptions, describeTarget, redisOptions, type ClusterNode, type RedisTarget, type RedisRole } from "./target.js";
import { credentialsMessage, credentialsRefusal, type CredentialsRefusal } from "./credentials.js";
import { certificateProblem, tlsNode } from "./tls-dial.js";

/** One Redis server or a Redis Cluster: every module takes this, never a bare Redis. */
export type RedisClient = Redis | Cluster;

export interface RedisSite {
  readonly target: RedisTarget;
  /** Set when the embedded server is in use; `owned` when this process must stop it. */
  readonly embedded: EmbeddedRedis | null;
}

export interface SiteSettings {
  readonly REDIS_URL?: string | undefined;
  readonly cluster?: { readonly nodes: readonly ClusterNode[]; readonly username?: string; readonly password?: string; readonly tls: boolean } | null;
  readonly SCQ_DATA_DIR: string;
  /** The user's list of embedded servers (see EmbeddedRedis); unset: not kept. */
  readonly registryDir?: string;
}

export async function resolveRedisSite(settings: SiteSettings, log: Logger, onOthersLive?: (dataDirs: readonly string[]) => void): Promise<RedisSite> {
  if (settings.cluster) return { target: { kind: "cluster", ...settings.cluster }, embedded: null };
  if (settings.REDIS_URL) return { target: { kind: "url", url: settings.REDIS_URL }, embedded: null };
  const embedded = await EmbeddedRedis.joinOrStart({
    dataDir: settings.SCQ_DATA_DIR,
    log,
    ...(settings.registryDir !== undefined ? { registryDir: settings.registryDir } : {}),
    ...(onOthersLive ? { onOthersLive } : {}),
  });
  return { target: { kind: "socket", path: embedded.socketPath }, embedded };
}

/** A client not yet connected (lazyConnect): a Cluster for cluster targets, else one Redis connection. */
export function createRedisClient(target: RedisTarget, role: RedisRole): RedisClient {
  if (target.kind === "cluster")
    return new Cluster(
      target.nodes.map((n) => ({ host: n.host, port: n.port })),
      { ...clusterOptions(target, role), lazyConnect: true },
    );
  return new Redis({ ...redisOptions(target, role), lazyConnect: true });
}

/**
 * A connection that is ready, or a clear error. Producers use it to fail fast;
 * workers use the same check once at start before handing retries to ioredis.
 */
export async function connectRedis(target: RedisTarget, role: RedisRole, timeoutMs = 5000): Promise<RedisClient> {
  const redis = createRedisClient(target, role);
  // Refused credentials reach us only as an error event; a worker's connection would retry them forever.
  let refusedCredentials: (refusal: CredentialsRefusal) => void = () => {};
  const refused = new Promise<never>((_, reject) => {
    refusedCredentials = (refusal) => reject(new AppError("redis_credentials_refused", credentialsMessage(refusal, describeTarget(target), target)));
  });
  refused.catch(() => {});
  const onError = (err: unknown) => {
    const refusal = credentialsRefusal(err) ?? credentialsRefusal((err as { lastNodeError?: unknown } | null)?.lastNodeError);
    if (refusal !== null) refusedCredentials(refusal);
  };
  // Errors surface through connect(); without a listener ioredis prints them as unhandled.
  redis.on("error", onError);
  if (redis instanceof Cluster) redis.on("node error", onError);
  try {
    await Promise.race([withTimeout(redis.connect(), timeoutMs), refused]);
    // A cluster answers only once its slots are known and served.
    if (redis instanceof Cluster) await Promise.race([withTimeout(redis.ping(), timeoutMs), refused]);
    redis.off("error", onError);
    redis.on("error", () => {});
    if (redis instanceof Cluster) redis.off("node error", onError);
    return redis;
  } catch (err) {
    redis.disconnect();
    if (err instanceof AppError && err.kind === "redis_credentials_refused") throw err;
    // ioredis says only "Connection is closed" (a cluster: "None of startup nodes is available") when the certificate is the reason.
    const node = tlsNode(target);
    const untrusted = node ? await certificateProblem(node) : null;
    if (untrusted !== null) {
      throw new AppError(
        "redis_unavailable",
        `cannot reach Redis at ${describeTarget(target)}: its TLS certificate is not trusted (${untrusted}). For a private CA, set NODE_EXTRA_CA_CERTS to the CA's PEM file.`,
      );
    }
    const fix =
      target.kind === "cluster"
        ? "Check REDIS_CLUSTER_NODES (and that the cluster is up: redis-cli --cluster check host:port)."
        : "Start Redis (or `npm start` for the embedded one) or fix REDIS_URL.";
    throw new AppError("redis_unavailable", `cannot reach Redis at ${describeTarget(target)}: ${(err as Error).message.replace(/\.$/, "")}. ${fix}`);
  }
}

/** Open once at start: answers PING and keeps jobs (noeviction) — on every master of a cluster. */
export async function checkRedis(target: RedisTarget): Promise<void> {
  const redis = await connectRedis(target, "producer");
  try {
    if (redis instanceof Cluster) {
      for (const node of redis.nodes("master"))
        await assertNoEviction(node, `${describeTarget(target)} (node ${node.options.host ?? "?"}:${node.options.port ?? "?"})`);
    } else {
      await assertNoEviction(redis, describeTarget(target));
    }
  } finally {
    redis.disconnect();
  }
}

/**
 * What BullMQ is handed: for one server its options (BullMQ opens and closes its own connections);
 * for a cluster a Cluster client, which BullMQ shares and duplicates for blocking calls, and `close` ends.
 */
export function bullConnection(target: RedisTarget): { readonly connection: ConnectionOptions; close(): Promise<void> } {
  if (target.kind !== "cluster") return { connection: redisOptions(target, "worker") as ConnectionOptions, close: async () => {} };
  const cluster = new Cluster(target.nodes.map((n) => ({ host: n.host, port: n.port })), clusterOptions(target, "worker"));
  cluster.on("error", () => {});
  return {
    connection: cluster as unknown as ConnectionOptions,
    close: async () => {
      await cluster.quit().catch(() => cluster.disconnect());
    },
  };
}

function withTimeout<T>(promise: Promise<T>, ms: number): Promise<T> {
  return new Promise<T>((resolve, reject) => {
    const timer = setTimeout(() => reject(new Error(`no answer within ${ms} ms`)), ms);
    promise.then(
      (v) => {
        clearTimeout(timer);
        resolve(v);
      },
      (e: unknown) => {
        clearTimeout(timer);
        reject(e instanceof Error ? e : new Error(String(e)));
      },
    );
  });
}
