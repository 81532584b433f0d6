// The egress forwarder (ADR 0035), one role of a container's main process (main.mts): it listens on
// 127.0.0.1:<port> — where the agent's HTTP_PROXY / HTTPS_PROXY point — and relays every connection to the run's
// egress proxy, a unix socket mounted into the container. The container has no network of its own
// (`--network none`), so this is its only way out. Plain Node, no import of the project.
import { connect, createServer, type Server } from "node:net";

export function forwardEgress(port: number, socketPath: string): Server {
  const server = createServer((client) => {
    const upstream = connect(socketPath);
    client.on("error", () => upstream.destroy());
    upstream.on("error", () => client.destroy());
    client.pipe(upstream).pipe(client);
  });
  server.listen(port, "127.0.0.1");
  return server;
}
