// The egress proxy of a run (ADR 0035): an HTTP forward proxy on a unix socket that only the run's containers
// reach (mounted into each, with the in-container forwarder, container-main/egress-forwarder.mts, in front of it). It takes `CONNECT host:port` (HTTPS
// and anything tunnelled) and absolute-form HTTP (`GET http://host:port/…`), checks the host asked for against the
// allowlist before it resolves or connects anything, and only then looks the name up (a static entry of the
// operator's first) and connects. Every decision is reported, once per connection.
import { lookup } from "node:dns/promises";
import { request as httpRequest, createServer, type IncomingMessage, type Server, type ServerResponse } from "node:http";
import { connect, isIP, type Socket } from "node:net";
import { chmod, rm } from "node:fs/promises";
import { allows, type EgressRule } from "./allowlist.js";

export interface EgressDecision {
  readonly host: string;
  readonly port: number;
  readonly allowed: boolean;
  /** Why a connection that was allowed still failed (the name did not resolve, the host refused). */
  readonly failed?: string;
}

export interface EgressProxyOptions {
  readonly rules: readonly EgressRule[];
  /** Static name → address entries, looked at before DNS (an internal gateway without a DNS name). */
  readonly hosts: ReadonlyMap<string, string>;
  readonly onDecision: (decision: EgressDecision) => void;
}

const DENIED_BODY = (host: string, port: number) => `sandcastle-queue egress policy: ${host}:${port} is not on this run's allowlist\n`;

/** `host:port` of a CONNECT, `[v6]:port` included; undefined for anything else. */
export function connectTarget(authority: string): { host: string; port: number } | undefined {
  const match = /^\[([0-9a-fA-F:.]+)\]:(\d{1,5})$/.exec(authority) ?? /^([^:[\]]+):(\d{1,5})$/.exec(authority);
  if (match === null) return undefined;
  const port = Number(match[2]);
  return port >= 1 && port <= 65535 ? { host: match[1]!.toLowerCase(), port } : undefined;
}

export class EgressProxy {
  private constructor(
    private readonly server: Server,
    readonly socketPath: string,
  ) {}

  static async listen(socketPath: string, opts: EgressProxyOptions): Promise<EgressProxy> {
    const address = async (host: string): Promise<string> => opts.hosts.get(host) ?? (isIP(host) !== 0 ? host : (await lookup(host)).address);
    const decide = (host: string, port: number): boolean => {
      const allowed = allows(opts.rules, host, port);
      if (!allowed) opts.onDecision({ host, port, allowed: false });
      return allowed;
    };
    const server = createServer((req, res) => void forward(req, res));
    const forward = async (req: IncomingMessage, res: ServerResponse): Promise<void> => {
      let url: URL;
      try {
        url = new URL(req.url ?? "");
      } catch {
        res.writeHead(400, { "content-type": "text/plain" }).end("sandcastle-queue egress proxy: send requests in absolute form (through HTTP_PROXY)\n");
        return;
      }
      if (url.protocol !== "http:") {
        res.writeHead(400, { "content-type": "text/plain" }).end("sandcastle-queue egress proxy: only http:// in absolute form; https goes through CONNECT\n");
        return;
      }
      const host = url.hostname.replace(/^\[|\]$/g, "").toLowerCase();
      const port = url.port === "" ? 80 : Number(url.port);
      if (!decide(host, port)) {
        res.writeHead(403, { "content-type": "text/plain" }).end(DENIED_BODY(host, port));
        return;
      }
      let ip: string;
      try {
        ip = await address(host);
      } catch (error) {
        opts.onDecision({ host, port, allowed: true, failed: `${host} did not resolve: ${(error as Error).message}` });
        res.writeHead(502, { "content-type": "text/plain" }).end(`sandcastle-queue egress proxy: ${host} did not resolve\n`);
        return;
      }
      opts.onDecision({ host, port, allowed: true });
      const upstream = httpRequest(
        { host: ip, port, method: req.method, path: `${url.pathname}${url.search}`, headers: { ...req.headers, host: url.host } },
        (answer) => {
          res.writeHead(answer.statusCode ?? 502, answer.headers);
          answer.pipe(res);
        },
      );
      upstream.on("error", (error) => {
        if (!res.headersSent) res.writeHead(502, { "content-type": "text/plain" });
        res.end(`sandcastle-queue egress proxy: ${host}:${port}: ${error.message}\n`);
      });
      req.pipe(upstream);
    };
    server.on("connect", (req: IncomingMessage, client: Socket, head: Buffer) => {
      client.on("error", () => {});
      const target = connectTarget(req.url ?? "");
      if (target === undefined) {
        client.end("HTTP/1.1 400 Bad Request\r\ncontent-type: text/plain\r\n\r\nsandcastle-queue egress proxy: CONNECT takes host:port\n");
        return;
      }
      if (!decide(target.host, target.port)) {
        client.end(`HTTP/1.1 403 Forbidden\r\ncontent-type: text/plain\r\n\r\n${DENIED_BODY(target.host, target.port)}`);
        return;
      }
      void address(target.host).then(
        (ip) => {
          const upstream = connect(target.port, ip);
          let connected = false;
          upstream.once("connect", () => {
            connected = true;
            opts.onDecision({ host: target.host, port: target.port, allowed: true });
            client.write("HTTP/1.1 200 Connection Established\r\n\r\n");
            if (head.length > 0) upstream.write(head);
            upstream.pipe(client);
            client.pipe(upstream);
          });
          upstream.on("error", (error) => {
            if (!connected) {
              opts.onDecision({ host: target.host, port: target.port, allowed: true, failed: error.message });
              client.end(
                `HTTP/1.1 502 Bad Gateway\r\ncontent-type: text/plain\r\n\r\nsandcastle-queue egress proxy: ${target.host}:${target.port}: ${error.message}\n`,
              );
            } else client.destroy();
          });
          client.once("close", () => upstream.destroy());
        },
        (error: Error) => {
          opts.onDecision({ host: target.host, port: target.port, allowed: true, failed: `${target.host} did not resolve: ${error.message}` });
          client.end(`HTTP/1.1 502 Bad Gateway\r\ncontent-type: text/plain\r\n\r\nsandcastle-queue egress proxy: ${target.host} did not resolve\n`);
        },
      );
    });
    server.on("clientError", (_error, socket) => socket.destroy());
    await rm(socketPath, { force: true });
    await new Promise<void>((resolve, reject) => {
      server.once("error", reject);
      server.listen(socketPath, () => resolve());
    });
    // The container's user connects to it through the bind mount; the run's 0700 directory keeps everyone else out.
    await chmod(socketPath, 0o666);
    return new EgressProxy(server, socketPath);
  }

  async close(): Promise<void> {
    this.server.closeAllConnections();
    await new Promise<void>((resolve) => this.server.close(() => resolve()));
    await rm(this.socketPath, { force: true });
  }
}
