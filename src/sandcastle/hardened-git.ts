// git on the host where it meets a run (ADR 0033): hooks and fsmonitor off, and a root process trusting
// another user's repository by its exact paths, never with `safe.directory=*` (git's guard against one
// user's repository config running code as another). The same settings two ways: `-c` arguments and the
// environment (GIT_CONFIG_COUNT, for every git a process and its libraries start).
import { realpathSync } from "node:fs";

export type GitSetting = readonly [key: string, value: string];

/** No hook and no fsmonitor command of any repository runs. */
export const NO_REPOSITORY_COMMANDS: readonly GitSetting[] = [
  ["core.hooksPath", "/dev/null"],
  ["core.fsmonitor", "false"],
];

/** `safe.directory` for each path as given and as resolved (git compares the one it found). */
export function trusting(paths: readonly string[]): GitSetting[] {
  const all = new Set<string>();
  for (const path of paths) {
    all.add(path);
    try {
      all.add(realpathSync(path));
    } catch {
      // not there (yet): the path as given is all git can meet
    }
  }
  return [...all].map((path) => ["safe.directory", path] as const);
}

export function configArgs(settings: readonly GitSetting[]): string[] {
  return settings.flatMap(([key, value]) => ["-c", `${key}=${value}`]);
}

/** The settings as git's environment; appended after any the environment already holds. */
export function configEnv(settings: readonly GitSetting[], env: NodeJS.ProcessEnv = {}): Record<string, string> {
  const start = Number.parseInt(env.GIT_CONFIG_COUNT ?? "0", 10) || 0;
  const out: Record<string, string> = { GIT_CONFIG_COUNT: String(start + settings.length) };
  settings.forEach(([key, value], i) => {
    out[`GIT_CONFIG_KEY_${start + i}`] = key;
    out[`GIT_CONFIG_VALUE_${start + i}`] = value;
  });
  return out;
}
