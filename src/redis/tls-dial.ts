// TLS to Redis outside ioredis: how a TLS socket is opened (the session-log appender), and why one would not be
// trusted — the reason ioredis' Cluster client swallows (its slot refresh ignores connection errors).
import { isIP } from "node:net";
import { connect, type ConnectionOptions, type TLSSocket } from "node:tls";
import type { ClusterNode, RedisTarget } from "./target.js";

/** A verified TLS connection (Node's CAs plus NODE_EXTRA_CA_CERTS); SNI takes host names only (RFC 6066). */
export function dialTls(host: string, port: number): TLSSocket {
  const options: ConnectionOptions = { host, port, ...(isIP(host) === 0 ? { servername: host } : {}) };
  return connect(options);
}

/** The first node of a TLS target (a rediss:// URL, a cluster with TLS); null without TLS. */
export function tlsNode(target: RedisTarget): ClusterNode | null {
  if (target.kind === "cluster") return target.tls ? (target.nodes[0] ?? null) : null;
  if (target.kind !== "url") return null;
  const u = new URL(target.url);
  return u.protocol === "rediss:" ? { host: u.hostname.replace(/^\[|\]$/g, ""), port: u.port ? Number(u.port) : 6379 } : null;
}

/** Why the server's certificate is not trusted (e.g. "self-signed certificate in certificate chain"); null when it is, or when the node does not answer. */
export function certificateProblem(node: ClusterNode, timeoutMs = 2000): Promise<string | null> {
  return new Promise((resolve) => {
    const socket = dialTls(node.host, node.port);
    const done = (problem: string | null) => {
      clearTimeout(timer);
      socket.destroy();
      resolve(problem);
    };
    const timer = setTimeout(() => done(null), timeoutMs);
    socket.once("secureConnect", () => done(null));
    socket.once("error", (err: Error & { code?: string }) => done(/CERT|SELF_SIGNED|UNABLE_TO_(GET|VERIFY)|ALTNAME/.test(err.code ?? "") ? err.message : null));
  });
}
