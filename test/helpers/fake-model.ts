// The fake model server (test/fixtures/fake-model/server.mjs) as tests use it: in a podman container with
// `--network none` whose namespace a run's containers join (SANDCASTLE_CONTAINER_NETWORK=container:<name>),
// so every byte between agent and model stays inside namespaces the test made; or as a process on the host's
// loopback for host (dry) runs. Its script and request log are files in a directory of the test's.
import { spawn, type ChildProcess } from "node:child_process";
import { randomBytes } from "node:crypto";
import { existsSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import { createServer } from "node:net";
import { tmpdir } from "node:os";
import { join, resolve } from "node:path";
import { waitFor } from "./cli.js";
import { podman } from "./containers.js";

export const FAKE_MODEL_SERVER = resolve(import.meta.dirname, "../fixtures/fake-model/server.mjs");
const PORT_IN_CONTAINER = 8080;

export type FakeStep = { bash: string } | { text: string };
export interface FakeScript {
  /** The key to expect; a request with another gets 401. */
  key?: string | null;
  failure?: null | "unauthorized" | "overloaded" | "hang" | "cut";
  roles?: Array<{ when?: string | null; steps: FakeStep[] }>;
  usage?: { input?: number; output?: number; cache_read?: number; cache_write?: number };
}

export interface FakeRequest {
  method: string;
  path: string;
  model?: string | null;
  tools?: string[];
  tool_results?: number;
  key?: "match" | "mismatch" | "missing";
  /** The user messages' text, in order (the prompt among them). */
  user_text?: string;
}

export class FakeModel {
  private constructor(
    readonly dir: string,
    /** The URL an agent beside it (same namespace, or the host) calls. */
    readonly url: string,
    private readonly container: string | null,
    private readonly proc: ChildProcess | null,
  ) {}

  /** In its own `--network none` container of `image` (which has node): join it with `network`. */
  static async inContainer(image: string, script: FakeScript): Promise<FakeModel> {
    const dir = mkdtempSync(join(tmpdir(), "scq-fake-model-"));
    writeFileSync(join(dir, "script.json"), JSON.stringify(script));
    const name = `scq-fake-model-${randomBytes(4).toString("hex")}`;
    podman([
      "run",
      "--detach",
      `--name=${name}`,
      "--network=none",
      `--volume=${dir}:/srv/fake`,
      `--volume=${FAKE_MODEL_SERVER}:/srv/server.mjs:ro`,
      "--entrypoint=node",
      image,
      "/srv/server.mjs",
      "--port",
      String(PORT_IN_CONTAINER),
      "--dir",
      "/srv/fake",
    ]);
    const fake = new FakeModel(dir, `http://127.0.0.1:${PORT_IN_CONTAINER}`, name, null);
    await waitFor(
      () => podman(["logs", name], { allowFail: true }).includes("fake model server on"),
      60_000,
      () => `the fake model server in ${name} to listen`,
    );
    return fake;
  }

  /** A process on the host's loopback (for runs on the host), stopped by its pid. */
  static async onHost(script: FakeScript): Promise<FakeModel> {
    const dir = mkdtempSync(join(tmpdir(), "scq-fake-model-"));
    writeFileSync(join(dir, "script.json"), JSON.stringify(script));
    const port = await freePort();
    const proc = spawn(process.execPath, [FAKE_MODEL_SERVER, "--port", String(port), "--dir", dir], { stdio: ["ignore", "pipe", "inherit"] });
    let out = "";
    proc.stdout!.on("data", (d: Buffer) => (out += d.toString()));
    await waitFor(() => out.includes("fake model server on"), 20_000, () => "the fake model server to listen");
    return new FakeModel(dir, `http://127.0.0.1:${port}`, null, proc);
  }

  /** `container:<name>`: what SANDCASTLE_CONTAINER_NETWORK says to put a run's containers in its namespace. */
  get network(): string {
    if (this.container === null) throw new Error("a fake model server on the host has no container network");
    return `container:${this.container}`;
  }

  script(script: FakeScript): void {
    writeFileSync(join(this.dir, "script.json"), JSON.stringify(script));
  }

  requests(): FakeRequest[] {
    const path = join(this.dir, "requests.jsonl");
    if (!existsSync(path)) return [];
    return readFileSync(path, "utf8")
      .split("\n")
      .filter(Boolean)
      .map((l) => JSON.parse(l) as FakeRequest);
  }

  /** Requests to a model (POSTs to a protocol's path). */
  modelRequests(): FakeRequest[] {
    return this.requests().filter((r) => r.method === "POST");
  }

  stop(): void {
    if (this.container !== null) podman(["rm", "--force", "--time=0", this.container], { allowFail: true });
    if (this.proc !== null && this.proc.exitCode === null) this.proc.kill("SIGKILL");
    rmSync(this.dir, { recursive: true, force: true });
  }
}

function freePort(): Promise<number> {
  return new Promise((resolvePort, reject) => {
    const server = createServer();
    server.once("error", reject);
    server.listen(0, "127.0.0.1", () => {
      const address = server.address();
      server.close(() => (typeof address === "object" && address !== null ? resolvePort(address.port) : reject(new Error("no port"))));
    });
  });
}
