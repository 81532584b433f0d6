// Container tests on real podman; whether they run: container-gate.ts (SCQ_TEST_CONTAINERS). The image comes from
// scripts/build-sandbox-image.sh (cached: built once per machine, serialized by the script's own lock), built when a
// container test file loads.
import { execFileSync, spawnSync } from "node:child_process";
import { chownSync, lstatSync, readdirSync } from "node:fs";
import { join, resolve } from "node:path";
import { DEFAULT_SANDBOX_IMAGE, LABEL_DEPLOYMENT, LABEL_RUN_ID, LABEL_SPARE_OF } from "../../src/sandcastle/containers/container-args.js";
import { waitFor } from "./cli.js";
import { skipWithout } from "./optional-tool.js";
import { engineEnv, podman } from "./podman.js";

export { engineEnv, podman } from "./podman.js";

const ROOT = resolve(import.meta.dirname, "../..");
export const TEST_IMAGE = DEFAULT_SANDBOX_IMAGE;
/** The image build can take minutes on a busy 2-core machine the first time. */
export const IMAGE_BUILD_TIMEOUT_MS = 600_000;

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
  const probe = spawnSync("podman", ["run", "--rm", "--network=none", TEST_IMAGE, "true"], {
    encoding: "utf8",
    env: { ...process.env, ...engineEnv() },
    timeout: 120_000,
  });
  if (probe.status !== 0) {
    return `podman cannot run a container here: ${probe.stderr.trim().split("\n").slice(-2).join(" | ")} (this machine kind needs CONTAINERS_CONF, see README "Containers")`;
  }
  return undefined;
}

/** true: describe.skipIf(skipContainers). Decided at import, once per test file (optional-tool.ts). */
export const skipContainers = skipWithout("container tests", "SCQ_TEST_CONTAINERS", whyNotUsable);

/** Container ids carrying the run's label (any state), whoever made them. */
export function runContainerIds(runId: string): string[] {
  return podman(["ps", "--all", "--no-trunc", `--filter=label=${LABEL_RUN_ID}=${runId}`, "--format={{.ID}}"])
    .split("\n")
    .filter((l) => l.trim().length > 0);
}

/** Ids of the deployment's running warm containers (ADR 0053): those with a spare-of label, not yet taken by a run. */
export function warmContainers(deployment: string): string[] {
  return podman(["ps", "--no-trunc", `--filter=label=${LABEL_DEPLOYMENT}=${deployment}`, `--filter=label=${LABEL_SPARE_OF}`, "--format={{.ID}} {{.Names}}"])
    .split("\n")
    .filter((l) => / spare-/.test(l))
    .map((l) => l.split(" ")[0]!);
}

/**
 * Waits until the run has no container. A container's server ends it once the host has its branch and the engine
 * removes it by itself (`--rm`, ADR 0051): gone a moment after the run's result, not with it.
 */
export function containersGone(runId: string, timeoutMs = 15_000): Promise<void> {
  return waitFor(() => runContainerIds(runId).length === 0, timeoutMs, () => `the containers of ${runId} to be gone (${runContainerIds(runId).join(", ")})`);
}

export function inspect(
  name: string,
): Record<string, unknown> & { Config: Record<string, unknown>; HostConfig: Record<string, unknown>; Mounts: Array<Record<string, unknown>> } {
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
