// A bare RESP PING over a unix socket: tells "a live server answers here" without ioredis' retry machinery.
import { createConnection } from "node:net";

export function pingSocket(path: string, timeoutMs = 500): Promise<boolean> {
  return new Promise((resolve) => {
    const socket = createConnection({ path });
    let settled = false;
    const done = (ok: boolean) => {
      if (settled) return;
      settled = true;
      clearTimeout(timer);
      socket.destroy();
      resolve(ok);
    };
    const timer = setTimeout(() => done(false), timeoutMs);
    let reply = "";
    socket.on("connect", () => socket.write("PING\r\n"));
    socket.on("data", (chunk) => {
      reply += chunk.toString("latin1");
      // "-LOADING" means alive but still reading its AOF: not ready yet.
      if (reply.includes("\r\n")) done(reply.startsWith("+PONG"));
    });
    socket.on("error", () => done(false));
    socket.on("close", () => done(false));
  });
}
