// Container tests on real podman. Whether they run: SCQ_TEST_CONTAINERS=require (.ci/run sets it) makes an
// unusable podman a loud failure; unset, a machine without a usable podman skips them with the reason
// printed (a developer's laptop); =skip skips them. The image comes from scripts/build-sandbox-image.sh
// (cached: built once per machine, serialized by the script's own lock), built when a container test file loads.
import { execFileSync, spawnSync } from "node:child_process";
import { randomBytes } from "node:crypto";
import { chownSync, lstatSync, readdirSync } from "node:fs";
import { join, resolve } from "node:path";
import { DEFAULT_SANDBOX_IMAGE, LABEL_RUN_ID } from "../../src/sandcastle/container-args.js";

const ROOT = resolve(import.meta.dirname, "../..");
export const TEST_IMAGE = DEFAULT_SANDBOX_IMAGE;
/** The image build can take minutes on a busy 2-core machine the first time. */
export const IMAGE_BUILD_TIMEOUT_MS = 600_000;

/** The engine's settings the service would hand podman (CONTAINERS_CONF on this machine kind). */
export function engineEnv(): Record<string, string> {
  const env: Record<string, string> = {};
  for (const name of ["CONTAINERS_CONF", "CONTAINERS_STORAGE_CONF", "XDG_RUNTIME_DIR"]) if (process.env[name]) env[name] = process.env[name]!;
  return env;
}

export function podman(args: readonly string[], opts: { allowFail?: boolean } = {}): string {
  const out = spawnSync("podman", [...args], { encoding: "utf8", env: { ...process.env, ...engineEnv() }, timeout: 120_000 });
  if (out.status !== 0 && !opts.allowFail) throw new Error(`podman ${args.join(" ")} failed (${out.status}): ${out.stderr}`);
  return out.stdout;
}

/** Builds (or finds cached) the test image. */
function buildTestImage(): void {
  execFileSync(join(ROOT, "scripts/build-sandbox-image.sh"), ["--cli", "podman", "--tag", TEST_IMAGE], {
    env: { ...process.env, ...engineEnv() },
    stdio: ["ignore", "ignore", "pipe"],
    timeout: IMAGE_BUILD_TIMEOUT_MS,
  });
}

/** Why container tests cannot run here, or undefined when they can: podman, the image, one real container. */
function whyNotUsable(): string | undefined {
  if (spawnSync("sh", ["-c", "command -v podman"]).status !== 0) return "podman is not installed (apt-get install podman runc)";
  try {
    buildTestImage();
  } catch (error) {
    const stderr = (error as { stderr?: Buffer }).stderr?.toString().trim() ?? "";
    return `the test image could not be built: ${stderr.split("\n").slice(-3).join(" | ") || (error as Error).message}`;
  }
  const probe = spawnSync("podman", ["run", "--rm", "--network=none", TEST_IMAGE, "true"], { encoding: "utf8", env: { ...process.env, ...engineEnv() }, timeout: 120_000 });
  if (probe.status !== 0) {
    return `podman cannot run a container here: ${probe.stderr.trim().split("\n").slice(-2).join(" | ")} (this machine kind needs CONTAINERS_CONF, see README "Containers")`;
  }
  return undefined;
}

export const containerMode = (process.env.SCQ_TEST_CONTAINERS ?? "auto") as "require" | "auto" | "skip";
// At import, once per test file: the decision must exist before describe.skipIf reads it.
const reason = containerMode === "skip" ? "SCQ_TEST_CONTAINERS=skip" : whyNotUsable();
if (reason !== undefined && containerMode === "require") {
  throw new Error(`container tests are required here (SCQ_TEST_CONTAINERS=require) but cannot run: ${reason}`);
}
if (reason !== undefined) console.warn(`container tests skipped: ${reason} (SCQ_TEST_CONTAINERS=require makes this a failure)`);
/** true: describe.skipIf(skipContainers). */
export const skipContainers = reason !== undefined;

/**
 * TEST_IMAGE plus the agent CLI stand-ins of test/fixtures/agent-clis (its Containerfile), under a tag of
 * the caller's own (two test runs on one machine never share it); `remove` untags it. Offline: the base is local.
 */
export function buildAgentCliImage(): { image: string; remove(): void } {
  const image = `localhost/sandcastle-queue-agent-clis:test-${randomBytes(4).toString("hex")}`;
  podman(["build", "--pull=never", "--quiet", `--build-arg=BASE=${TEST_IMAGE}`, `--tag=${image}`, join(ROOT, "test/fixtures/agent-clis")]);
  return { image, remove: () => void podman(["rmi", "--force", image], { allowFail: true }) };
}

/** Container ids carrying the run's label (any state), whoever made them. */
export function runContainerIds(runId: string): string[] {
  return podman(["ps", "--all", "--no-trunc", `--filter=label=${LABEL_RUN_ID}=${runId}`, "--format={{.ID}}"])
    .split("\n")
    .filter((l) => l.trim().length > 0);
}

export function inspect(name: string): Record<string, unknown> & { Config: Record<string, unknown>; HostConfig: Record<string, unknown>; Mounts: Array<Record<string, unknown>> } {
  return (JSON.parse(podman(["inspect", name])) as Array<never>)[0]!;
}

/** As root, a repository is given to uid/gid 1000 (containers act as the repository's owner, never root). */
export function giveToAgentUser(path: string): void {
  if (process.getuid?.() !== 0) return;
  const walk = (p: string) => {
    chownSync(p, 1000, 1000);
    if (lstatSync(p).isDirectory()) for (const name of readdirSync(p)) walk(join(p, name));
  };
  walk(path);
}

/** git as root in a repository another uid owns. */
export function gitIn(repo: string, ...args: string[]): string {
  return execFileSync("git", ["-c", "safe.directory=*", ...args], { cwd: repo, encoding: "utf8" }).trim();
}
