// Sandcastle's sandbox setup runs `git config --global --add safe.directory <worktree>` and
// `git config --global user.name/user.email` *inside the sandbox*. With noSandbox that sandbox is
// the host, so every run would append to the real ~/.gitconfig and overwrite the global identity.
// (Concurrent runs also fail on that file's lock: "could not lock config file ~/.gitconfig".)
// For host runs the child points GIT_CONFIG_GLOBAL (via the sandbox provider's env, so only the
// agent's processes see it) at a throwaway file per agent phase that includes the user's real
// global config: reads see it, writes land in the throwaway file. It lives in the run's directory
// (removed with the run by the worker, whatever kills the child) and is removed when the child exits.
import { existsSync, mkdtempSync, rmSync, writeFileSync } from "node:fs";
import { homedir } from "node:os";
import { join } from "node:path";

export interface IsolatedGitConfig {
  readonly env: Record<string, string>;
  dispose(): void;
}

export function isolateGlobalGitConfig(runDir: string): IsolatedGitConfig {
  const dir = mkdtempSync(join(runDir, "gitconfig-"));
  const file = join(dir, "config");
  const home = process.env.HOME ?? homedir();
  const xdg = process.env.XDG_CONFIG_HOME ?? join(home, ".config");
  const includes = [join(xdg, "git", "config"), join(home, ".gitconfig")].filter((p) => existsSync(p));
  const body = includes.map((p) => `[include]\n\tpath = ${JSON.stringify(p)}\n`).join("");
  writeFileSync(file, body, { mode: 0o600 });
  let disposed = false;
  return {
    env: { GIT_CONFIG_GLOBAL: file },
    dispose() {
      if (disposed) return;
      disposed = true;
      rmSync(dir, { recursive: true, force: true });
    },
  };
}
