// docker-compose.yml brought up for real under Debian's podman-compose (1.0.3) on real podman, with the images
// scripts/build-service-images.sh builds offline. Each stack is a project of its own (its name on every container,
// network and volume podman-compose makes), in a directory of its own holding the compose file, a .env and config/.
import { execFileSync, spawnSync } from "node:child_process";
import { copyFileSync, mkdirSync, writeFileSync } from "node:fs";
import { join, resolve } from "node:path";
import { randomBytes } from "node:crypto";
import { COMPOSE_FILE } from "./compose-file.js";
import { skipWithout } from "./optional-tool.js";
import { engineEnv, podman } from "./podman.js";
import { tempDir } from "./scope.js";

const ROOT = resolve(import.meta.dirname, "../..");
export const REDIS_IMAGE = "localhost/sandcastle-queue-redis:7";
export const SERVICE_IMAGE = "localhost/sandcastle-queue:local";
const PROJECT_LABEL = "io.podman.compose.project";
/** The first build takes minutes on a busy 2-core machine (debootstrap twice, npm ci, the image). */
const IMAGE_BUILD_TIMEOUT_MS = 600_000;

function whyNotUsable(): string | undefined {
  for (const tool of ["podman", "podman-compose"]) {
    if (spawnSync("sh", ["-c", `command -v ${tool}`]).status !== 0) return `${tool} is not installed (apt-get install podman runc podman-compose)`;
  }
  try {
    execFileSync(join(ROOT, "scripts/build-service-images.sh"), ["--cli", "podman"], {
      env: { ...process.env, ...engineEnv() },
      stdio: ["ignore", "ignore", "pipe"],
      timeout: IMAGE_BUILD_TIMEOUT_MS,
    });
  } catch (error) {
    const stderr = (error as { stderr?: Buffer }).stderr?.toString().trim() ?? "";
    return `the service images could not be built: ${stderr.split("\n").slice(-3).join(" | ") || (error as Error).message}`;
  }
  const probe = spawnSync("podman", ["run", "--rm", "--network=none", REDIS_IMAGE, "true"], {
    encoding: "utf8",
    env: { ...process.env, ...engineEnv() },
    timeout: 120_000,
  });
  if (probe.status !== 0)
    return `podman cannot run a container here: ${probe.stderr.trim().split("\n").slice(-2).join(" | ")} (this machine kind needs CONTAINERS_CONF, see README "Containers")`;
  return undefined;
}

/** true: describe.skipIf(skipCompose). */
export const skipCompose = skipWithout("compose tests", "SCQ_TEST_CONTAINERS", whyNotUsable);

export interface ComposeResult {
  readonly code: number;
  readonly output: string;
}

export class ComposeStack {
  readonly project = `scqtest${randomBytes(4).toString("hex")}`;
  readonly dir = tempDir("scq-compose");

  /** `env`: the project's .env, as an operator writes it. */
  constructor(env: Record<string, string>) {
    copyFileSync(COMPOSE_FILE, join(this.dir.path, "docker-compose.yml"));
    writeFileSync(join(this.dir.path, ".env"), Object.entries(env).map(([k, v]) => `${k}=${v}\n`).join(""), { mode: 0o600 });
    mkdirSync(join(this.dir.path, "config", "env-manifests"), { recursive: true });
  }

  writeConfig(relative: string, text: string): void {
    writeFileSync(join(this.dir.path, "config", relative), text);
  }

  /** podman-compose in the project's directory, as an operator runs it there. */
  compose(args: readonly string[], timeoutMs = 180_000): ComposeResult {
    const out = spawnSync("podman-compose", ["-p", this.project, ...args], {
      cwd: this.dir.path,
      encoding: "utf8",
      env: { ...process.env, ...engineEnv() },
      timeout: timeoutMs,
    });
    return { code: out.status ?? -1, output: `${out.stdout}${out.stderr}` };
  }

  /** podman-compose 1.0.3's name for a service's (first) container. */
  container(service: string): string {
    return `${this.project}_${service}_1`;
  }

  containers(): string[] {
    return lines(podman(["ps", "--all", "--filter", `label=${PROJECT_LABEL}=${this.project}`, "--format", "{{.Names}}"]));
  }

  networks(): string[] {
    return lines(podman(["network", "ls", "--filter", `label=${PROJECT_LABEL}=${this.project}`, "--format", "{{.Name}}"]));
  }

  volumes(): string[] {
    return lines(podman(["volume", "ls", "--filter", `label=${PROJECT_LABEL}=${this.project}`, "--format", "{{.Name}}"]));
  }

  /**
   * Runs the container's own health check (as its image and compose file define it) until it passes. Without systemd
   * (this machine kind), podman schedules no periodic checks: their timers are systemd units.
   */
  async waitHealthy(service: string, timeoutMs: number): Promise<void> {
    const name = this.container(service);
    const deadline = Date.now() + timeoutMs;
    let last = "";
    while (Date.now() < deadline) {
      const run = spawnSync("podman", ["healthcheck", "run", name], { encoding: "utf8", env: { ...process.env, ...engineEnv() }, timeout: 60_000 });
      if (run.status === 0) return;
      last = `${run.stdout}${run.stderr}`.trim();
      await new Promise((r) => setTimeout(r, 1000));
    }
    throw new Error(`${name} was not healthy within ${timeoutMs} ms: ${last}; its log: ${podman(["logs", "--tail", "20", name], { allowFail: true })}`);
  }

  /** Everything of this project, whatever state it is in: containers, networks, volumes, the directory. */
  removeAll(): void {
    const containers = this.containers();
    if (containers.length > 0) podman(["rm", "--force", "--time", "1", ...containers], { allowFail: true });
    for (const network of this.networks()) podman(["network", "rm", "--force", network], { allowFail: true });
    for (const volume of this.volumes()) podman(["volume", "rm", "--force", volume], { allowFail: true });
    this.dir.remove();
  }
}

const lines = (text: string) => text.split("\n").map((l) => l.trim()).filter(Boolean);
