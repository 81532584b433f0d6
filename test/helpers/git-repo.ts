// A temp git repository with one commit on main (used by tests and by `npm run bench`).
import { execFileSync } from "node:child_process";
import { mkdirSync, writeFileSync } from "node:fs";
import { join } from "node:path";

export function makeGitRepo(path: string): void {
  mkdirSync(path, { recursive: true });
  const git = (...args: string[]) => execFileSync("git", args, { cwd: path, stdio: "pipe" });
  git("init", "-q", "-b", "main");
  git("config", "user.email", "test@example.com");
  git("config", "user.name", "test");
  writeFileSync(join(path, "README.md"), "repo\n");
  git("add", ".");
  git("commit", "-q", "-m", "init");
}

export function gitOut(path: string, ...args: string[]): string {
  return execFileSync("git", args, { cwd: path, encoding: "utf8" }).trim();
}
