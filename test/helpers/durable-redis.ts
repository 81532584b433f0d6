// A redis-server that keeps its data across a SIGKILL, as the embedded one does (AOF, appendfsync always):
// one directory and one port for its whole life, so a restart brings the same data back where clients look.
import { spawn, type ChildProcess } from "node:child_process";
import { Redis } from "ioredis";
import { waitFor } from "./cli.js";
import { freePort } from "./redis-server.js";
import { tempDir } from "./scope.js";

export class DurableRedis {
  private readonly dir = tempDir("scqd");
  private child: ChildProcess | null = null;
  private port = 0;

  get url(): string {
    return `redis://127.0.0.1:${this.port}`;
  }

  get pid(): number | undefined {
    return this.child?.pid;
  }

  /** Starts (or restarts, on the same port and data) and waits until it answers PING. */
  async start(): Promise<this> {
    if (this.child) throw new Error("DurableRedis is already running");
    if (this.port === 0) this.port = await freePort();
    const args = [
      "--port",
      String(this.port),
      "--bind",
      "127.0.0.1",
      "--dir",
      this.dir.path,
      "--appendonly",
      "yes",
      "--appendfsync",
      "always",
      "--save",
      "",
      "--maxmemory-policy",
      "noeviction",
    ];
    this.child = spawn("redis-server", args, { stdio: "ignore" });
    await waitFor(() => this.answers(), 15_000, () => `redis-server on port ${this.port} to answer`);
    return this;
  }

  /** SIGKILL (no shutdown, no final fsync beyond what `always` already did) and wait for the exit. */
  async kill(): Promise<void> {
    const child = this.child;
    if (!child) return;
    this.child = null;
    if (child.exitCode === null && child.signalCode === null) {
      const exited = new Promise((r) => child.once("exit", r));
      child.kill("SIGKILL");
      await exited;
    }
  }

  async stop(): Promise<void> {
    await this.kill();
    this.dir.remove();
  }

  private async answers(): Promise<boolean> {
    const probe = new Redis(this.port, "127.0.0.1", { lazyConnect: true, maxRetriesPerRequest: 0, retryStrategy: () => null });
    probe.on("error", () => {});
    try {
      await probe.connect();
      return (await probe.ping()) === "PONG";
    } catch {
      return false;
    } finally {
      probe.disconnect();
    }
  }
}
