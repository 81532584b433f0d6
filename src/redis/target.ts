// Where Redis is: a URL given by the operator, the unix socket of the embedded server, or a Redis Cluster's seed nodes.
import type { ClusterOptions, RedisOptions } from "ioredis";

export interface ClusterNode {
  readonly host: string;
  readonly port: number;
}

export type RedisTarget =
  | { readonly kind: "url"; readonly url: string }
  | { readonly kind: "socket"; readonly path: string }
  | {
      readonly kind: "cluster";
      /** Seed nodes: any reachable one tells the client the rest. */
      readonly nodes: readonly ClusterNode[];
      readonly username?: string;
      readonly password?: string;
      readonly tls: boolean;
    };

export type Role = "worker" | "producer";

/** For humans and `status`: the URL with any password masked; a cluster as its seed nodes. */
export function describeTarget(target: RedisTarget): string {
  if (target.kind === "socket") return `unix://${target.path}`;
  if (target.kind === "cluster") return `${target.tls ? "rediss" : "redis"}-cluster://${target.nodes.map(formatNode).join(",")}`;
  try {
    const u = new URL(target.url);
    if (u.password) u.password = "***";
    if (u.username && !u.password) u.username = "***";
    return u.toString();
  } catch {
    return "redis://(unparseable URL)";
  }
}

export function formatNode(node: ClusterNode): string {
  return node.host.includes(":") ? `[${node.host}]:${node.port}` : `${node.host}:${node.port}`;
}

/** `host:port,host:port` (IPv6 as [::1]:7000): the seed nodes, or the first part that is not one. */
export function parseClusterNodes(text: string): { nodes: ClusterNode[] } | { bad: string } {
  const nodes: ClusterNode[] = [];
  for (const part of text.split(",").map((s) => s.trim()).filter((s) => s.length > 0)) {
    const match = /^(?:\[([0-9a-fA-F:.]+)\]|([A-Za-z0-9.-]+)):(\d{1,5})$/.exec(part);
    const port = match ? Number(match[3]) : 0;
    if (!match || port < 1 || port > 65535) return { bad: part };
    nodes.push({ host: (match[1] ?? match[2]) as string, port });
  }
  return nodes.length > 0 ? { nodes } : { bad: text };
}

/**
 * ioredis options for one role. Workers retry forever (BullMQ requires maxRetriesPerRequest null);
 * producers give up fast so an enqueue against a dead Redis fails loudly instead of hanging.
 * For a cluster these are the options of each node's connection.
 */
export function redisOptions(target: RedisTarget, role: Role): RedisOptions {
  const base: RedisOptions = target.kind === "socket" ? { path: target.path } : target.kind === "cluster" ? clusterNodeOptions(target) : urlOptions(target.url);
  if (role === "worker") return { ...base, maxRetriesPerRequest: null, enableReadyCheck: true };
  return {
    ...base,
    maxRetriesPerRequest: 1,
    connectTimeout: 3000,
    enableOfflineQueue: true,
    retryStrategy: (times) => (times > 2 ? null : 200 * times),
  };
}

/** ioredis Cluster options for one role: the node options above, plus how long to wait out a failover. */
export function clusterOptions(target: Extract<RedisTarget, { kind: "cluster" }>, role: Role): ClusterOptions {
  const node = redisOptions(target, role);
  const { maxRetriesPerRequest, enableOfflineQueue, ...redisOpts } = node;
  return {
    redisOptions: { ...redisOpts, ...(maxRetriesPerRequest !== undefined ? { maxRetriesPerRequest } : {}) },
    ...(enableOfflineQueue !== undefined ? { enableOfflineQueue } : {}),
    // A master's failover takes about cluster-node-timeout: workers wait it out, producers fail within seconds.
    clusterRetryStrategy: role === "worker" ? (times) => Math.min(100 * times, 2000) : (times) => (times > 2 ? null : 200 * times),
    retryDelayOnFailover: 200,
    retryDelayOnClusterDown: 300,
    retryDelayOnTryAgain: 100,
    maxRedirections: 16,
    slotsRefreshTimeout: 2000,
    // TLS checks the certificate against the node's name: keep names as given instead of resolving them first (ioredis README).
    ...(target.tls ? { dnsLookup: (address: string, callback: (err: null, address: string) => void) => callback(null, address) } : {}),
  };
}

function clusterNodeOptions(target: Extract<RedisTarget, { kind: "cluster" }>): RedisOptions {
  const options: RedisOptions = {};
  if (target.username !== undefined) options.username = target.username;
  if (target.password !== undefined) options.password = target.password;
  if (target.tls) options.tls = {};
  return options;
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
