// A real, isolated redis-server for tests: temp dir, free loopback port, stopped by its pid.
import { spawn } from "node:child_process";
import { mkdtempSync, rmSync } from "node:fs";
import { createServer } from "node:net";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { Redis } from "ioredis";
import type { TestCerts } from "./tls-certs.js";

export interface TestRedis {
  readonly url: string;
  readonly pid: number;
  stop(): Promise<void>;
}

export async function freePort(): Promise<number> {
  return new Promise((resolve, reject) => {
    const srv = createServer();
    srv.once("error", reject);
    srv.listen(0, "127.0.0.1", () => {
      const addr = srv.address();
      const port = typeof addr === "object" && addr !== null ? addr.port : 0;
      srv.close(() => resolve(port));
    });
  });
}

/**
 * `port`: that port, one attempt (to bring a stopped server back where its clients look for it).
 * `tls`: TLS only (no plain port), at a rediss:// URL.
 */
export async function startRedisServer(extraArgs: string[] = [], fixedPort?: number, tls?: TestCerts): Promise<TestRedis> {
  const dir = mkdtempSync(join(tmpdir(), "scq-redis-"));
  for (let attempt = 0; attempt < (fixedPort === undefined ? 5 : 1); attempt++) {
    const port = fixedPort ?? (await freePort());
    const listen = tls ? ["--port", "0", "--tls-port", String(port), ...tls.serverArgs] : ["--port", String(port)];
    const child = spawn(
      "redis-server",
      [...listen, "--bind", "127.0.0.1", "--dir", dir, "--save", "", "--appendonly", "no", "--maxmemory-policy", "noeviction", ...extraArgs],
      { stdio: "ignore" },
    );
    const pid = child.pid!;
    const url = `${tls ? "rediss" : "redis"}://127.0.0.1:${port}`;
    const exited = new Promise<void>((r) => child.once("exit", () => r()));
    if (await answers(url, 5000, tls)) {
      return {
        url,
        pid,
        stop: async () => {
          try {
            process.kill(pid, "SIGKILL");
          } catch {
            // already gone
          }
          await exited;
          rmSync(dir, { recursive: true, force: true });
        },
      };
    }
    try {
      process.kill(pid, "SIGKILL");
    } catch {
      // lost the port race
    }
  }
  throw new Error("could not start a test redis-server");
}

async function answers(url: string, timeoutMs: number, tls?: TestCerts): Promise<boolean> {
  const deadline = Date.now() + timeoutMs;
  while (Date.now() < deadline) {
    const r = new Redis(url, { lazyConnect: true, maxRetriesPerRequest: 0, retryStrategy: () => null, ...(tls ? { tls: { ca: tls.caPem() } } : {}) });
    r.on("error", () => {});
    try {
      await r.connect();
      await r.ping();
      r.disconnect();
      return true;
    } catch {
      r.disconnect();
      await new Promise((res) => setTimeout(res, 50));
    }
  }
  return false;
}
