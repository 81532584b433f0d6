// A real Redis Cluster for tests: 3 masters + 3 replicas (or as asked, TLS-only if asked) from redis-server
// --cluster-enabled on loopback, created by redis-cli --cluster create; every server is stopped by its pid.
import { spawn, execFile, type ChildProcess } from "node:child_process";
import { mkdirSync, mkdtempSync, rmSync } from "node:fs";
import { createServer } from "node:net";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { promisify } from "node:util";
import { Cluster, Redis } from "ioredis";
import { createRedisClient } from "../../src/redis/connect.js";
import { clusterOptions, type RedisTarget } from "../../src/redis/target.js";
import { waitFor } from "./cli.js";
import type { RedisBackend } from "./redis-backend.js";
import type { TestCerts } from "./tls-certs.js";

const run = promisify(execFile);

export interface ClusterServer {
  readonly port: number;
  readonly dir: string;
  child: ChildProcess | null;
}

export class TestCluster {
  private constructor(
    readonly servers: ClusterServer[],
    private readonly root: string,
    /** Set: the nodes speak TLS only (clients, the bus and replication), with these certificates. */
    readonly tls: TestCerts | null = null,
  ) {}

  /** REDIS_CLUSTER_NODES for these servers. */
  get seeds(): string {
    return this.servers.map((s) => `127.0.0.1:${s.port}`).join(",");
  }

  get target(): Extract<RedisTarget, { kind: "cluster" }> {
    return { kind: "cluster", nodes: this.servers.map((s) => ({ host: "127.0.0.1", port: s.port })), tls: this.tls !== null };
  }

  /** For RunScope / MargotScope: CLI processes and the test's own client on this cluster. */
  backend(): RedisBackend {
    return {
      env: { REDIS_CLUSTER_NODES: this.seeds, ...(this.tls ? { REDIS_CLUSTER_TLS: "1", NODE_EXTRA_CA_CERTS: this.tls.ca } : {}) },
      client: () => (this.tls ? this.tlsClient() : createRedisClient(this.target, "worker")),
      // Keys of one test's prefix go when the whole cluster is removed after the file.
      deletePrefix: async () => {},
    };
  }

  /** The test's own client of a TLS cluster: the CA given in-process (CLI processes get NODE_EXTRA_CA_CERTS). */
  private tlsClient(): Cluster {
    const options = clusterOptions(this.target, "worker");
    return new Cluster(
      this.target.nodes.map((n) => ({ ...n })),
      { ...options, redisOptions: { ...options.redisOptions, tls: { ca: this.tls!.caPem() } }, lazyConnect: true },
    );
  }

  /** `tls`: made with certs from tls-certs.ts (their files must outlive the cluster). */
  static async start(opts: { size?: number; replicas?: number; tls?: TestCerts } = {}): Promise<TestCluster> {
    const { size = 6, replicas = 1 } = opts;
    const root = mkdtempSync(join(tmpdir(), "scq-cluster-"));
    const ports = await clusterPorts(size);
    const servers: ClusterServer[] = ports.map((port) => ({ port, dir: join(root, String(port)), child: null }));
    const cluster = new TestCluster(servers, root, opts.tls ?? null);
    try {
      for (const s of servers) {
        mkdirSync(s.dir);
        await cluster.launch(s);
      }
      const tlsArgs = opts.tls ? ["--tls", "--cacert", opts.tls.ca] : [];
      await run(
        "redis-cli",
        [...tlsArgs, "--cluster", "create", ...ports.map((p) => `127.0.0.1:${p}`), "--cluster-replicas", String(replicas), "--cluster-yes"],
        { timeout: 30_000 },
      );
      await cluster.waitHealthy(30_000);
      return cluster;
    } catch (err) {
      await cluster.stop();
      throw err;
    }
  }

  /** (Re)starts one server on its port and data dir (its AOF and nodes.conf survive). */
  async launch(s: ClusterServer): Promise<void> {
    const listen = this.tls
      ? ["--port", "0", "--tls-port", String(s.port), "--tls-cluster", "yes", "--tls-replication", "yes", ...this.tls.serverArgs]
      : ["--port", String(s.port)];
    const child = spawn(
      "redis-server",
      [
        ...listen, "--bind", "127.0.0.1", "--dir", s.dir,
        "--cluster-enabled", "yes", "--cluster-config-file", "nodes.conf", "--cluster-node-timeout", "1500",
        "--appendonly", "yes", "--appendfsync", "always", "--save", "", "--maxmemory-policy", "noeviction",
      ],
      { stdio: "ignore" },
    );
    s.child = child;
    await waitFor(async () => (await this.ask(s.port, ["PING"])) === "PONG", 10_000, () => `redis-server on ${s.port} to answer`);
  }

  /** SIGKILL one server and wait until it is gone. */
  async kill(port: number): Promise<void> {
    const s = this.server(port);
    const child = s.child;
    if (!child || child.exitCode !== null) return;
    const exited = new Promise<void>((r) => child.once("exit", () => r()));
    child.kill("SIGKILL");
    await exited;
    s.child = null;
  }

  server(port: number): ClusterServer {
    const s = this.servers.find((x) => x.port === port);
    if (!s) throw new Error(`no cluster server on ${port}`);
    return s;
  }

  /** The master serving `key`'s slot, as a live node sees it. */
  async masterOf(key: string): Promise<number> {
    const slot = Number(await this.ask(this.live(), ["CLUSTER", "KEYSLOT", key]));
    for (const node of await this.topology()) {
      if (node.master && node.slots.some(([lo, hi]) => slot >= lo && slot <= hi)) return node.port;
    }
    throw new Error(`no live master serves slot ${slot}`);
  }

  /** Masters as each node says of itself (ROLE): one node's CLUSTER NODES can lag just after a failover. */
  async masters(): Promise<number[]> {
    const ports: number[] = [];
    for (const n of await this.topology()) {
      const role = await this.ask(n.port, ["ROLE"]);
      if (n.master && Array.isArray(role) && role[0] === "master") ports.push(n.port);
    }
    return ports;
  }

  async replicaOf(masterPort: number): Promise<number> {
    const nodes = await this.topology();
    const id = nodes.find((n) => n.port === masterPort)?.id;
    const replica = nodes.find((n) => n.masterId === id);
    if (!replica) throw new Error(`no replica of ${masterPort}`);
    return replica.port;
  }

  /** CLUSTER NODES of a live node: live nodes with their role and slot ranges. */
  private async topology(): Promise<Array<{ id: string; port: number; master: boolean; masterId: string; slots: Array<[number, number]> }>> {
    const text = String(await this.ask(this.live(), ["CLUSTER", "NODES"]));
    return text
      .trim()
      .split("\n")
      .map((line) => line.split(" "))
      .filter((f) => !f[2]!.includes("fail") && f[7] === "connected")
      .map((f) => ({
        id: f[0]!,
        port: Number(f[1]!.split("@")[0]!.split(":")[1]),
        master: f[2]!.includes("master"),
        masterId: f[3]!,
        slots: f.slice(8).filter((r) => !r.startsWith("[")).map((r) => {
          const [lo, hi] = r.split("-").map(Number);
          return [lo!, hi ?? lo!] as [number, number];
        }),
      }));
  }

  private live(): number {
    const s = this.servers.find((x) => x.child !== null);
    if (!s) throw new Error("no cluster server is running");
    return s.port;
  }

  /** Every live node says cluster_state:ok and every slot is served. */
  async waitHealthy(timeoutMs: number): Promise<void> {
    await waitFor(
      async () => {
        for (const s of this.servers) {
          if (s.child === null) continue;
          const info = String(await this.ask(s.port, ["CLUSTER", "INFO"]));
          if (!/cluster_state:ok/.test(info) || !/cluster_slots_ok:16384/.test(info)) return false;
        }
        return true;
      },
      timeoutMs,
      () => "the cluster to be healthy",
    );
  }

  async stop(): Promise<void> {
    for (const s of this.servers) await this.kill(s.port);
    rmSync(this.root, { recursive: true, force: true });
  }

  /** One command to one node (not cluster-aware); null when it does not answer. */
  async ask(port: number, args: string[]): Promise<unknown> {
    const r = new Redis({
      port,
      host: "127.0.0.1",
      lazyConnect: true,
      maxRetriesPerRequest: 0,
      retryStrategy: () => null,
      connectTimeout: 1000,
      ...(this.tls ? { tls: { ca: this.tls.caPem() } } : {}),
    });
    r.on("error", () => {});
    try {
      await r.connect();
      return await r.call(args[0]!, ...args.slice(1));
    } catch {
      return null;
    } finally {
      r.disconnect();
    }
  }
}

/** Ports p with p and p + 10000 (the cluster bus) both free. */
async function clusterPorts(count: number): Promise<number[]> {
  const ports: number[] = [];
  while (ports.length < count) {
    const p = 20000 + Math.floor(Math.random() * 25000);
    if (ports.includes(p) || !(await isFree(p)) || !(await isFree(p + 10000))) continue;
    ports.push(p);
  }
  return ports;
}

function isFree(port: number): Promise<boolean> {
  return new Promise((resolve) => {
    const srv = createServer();
    srv.once("error", () => resolve(false));
    srv.listen(port, "127.0.0.1", () => srv.close(() => resolve(true)));
  });
}
