// `sandbox open --publish`: a port of a server started in the sandbox, reachable on the host's 127.0.0.1. The sandbox
// has no network of its own (the egress policy, ADR 0035), so the engine cannot publish a port: the CLI listens on
// 127.0.0.1:<host port> and carries each connection into the container through an `exec` of a small Node relay to
// the server's 127.0.0.1:<port> there. One exec per connection: a preview in a browser, not a production path.
import { spawn } from "node:child_process";
import { createServer, type Server } from "node:net";
import type { ContainerCli } from "./container-cli.js";
import type { Publish } from "./sandbox-shell.js";

/** Runs inside the container: stdin/stdout ↔ 127.0.0.1:<argv[1]>. */
const RELAY =
  'const s=require("node:net").connect(Number(process.argv[1]),"127.0.0.1");process.stdin.pipe(s).pipe(process.stdout);s.on("error",()=>process.exit(1));s.on("close",()=>process.exit(0));';

export function publishIntoContainer(cli: ContainerCli, container: string, publish: Publish): Promise<Server> {
  const server = createServer((socket) => {
    const relay = spawn(cli.path, ["exec", "--interactive", container, "node", "-e", RELAY, String(publish.port)], {
      env: { ...cli.env },
      stdio: ["pipe", "pipe", "ignore"],
    });
    socket.pipe(relay.stdin!);
    relay.stdout!.pipe(socket);
    const end = () => {
      socket.destroy();
      relay.kill("SIGKILL");
    };
    socket.on("error", end);
    socket.on("close", end);
    relay.on("error", end);
    relay.on("close", () => socket.end());
  });
  return new Promise((resolve, reject) => {
    server.once("error", reject);
    server.listen(publish.hostPort, "127.0.0.1", () => resolve(server));
  });
}
