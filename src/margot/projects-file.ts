// Reading the projects config file (PROJECTS_CONFIG_PATH; format in projects.ts). The path is
// passed in by an entry point; the file is re-read when it changes, so edits need no restart (they
// take effect within PROJECTS_RECHECK_MS).
import { readFile, stat } from "node:fs/promises";
import { formatIssues } from "../invalid-input.js";
import type { Logger } from "../log.js";
import { ProjectsConfig, type Project } from "./projects.js";
import { ProjectsConfigError } from "../errors.js";

export { ProjectsConfigError };

export async function readProjectsFile(path: string): Promise<readonly Project[] | null> {
  let text: string;
  try {
    text = await readFile(path, "utf8");
  } catch (err) {
    if ((err as NodeJS.ErrnoException).code === "ENOENT") return null;
    throw err;
  }
  let raw: unknown;
  try {
    raw = JSON.parse(text);
  } catch (err) {
    throw new ProjectsConfigError(`PROJECTS_CONFIG_PATH ${path} is not valid JSON: ${(err as Error).message}`);
  }
  const parsed = ProjectsConfig.safeParse(raw);
  if (!parsed.success) throw new ProjectsConfigError(`PROJECTS_CONFIG_PATH ${path} is invalid: ${formatIssues(parsed.error)}`);
  return parsed.data.projects;
}

/** How often the file's mtime is looked at: every completion asks, and a stat per completion would cost more than the rest. */
export const PROJECTS_RECHECK_MS = 1000;

/**
 * A loader that re-reads the file when its mtime changes, looked at no more than once per
 * PROJECTS_RECHECK_MS (callers meanwhile share the last answer or the check under way); a missing
 * file is an empty allowlist (warned once).
 */
export function projectsLoader(path: string, log: Logger, now: () => number = Date.now): () => Promise<readonly Project[]> {
  let cached: { mtimeMs: number | null; projects: readonly Project[] } | null = null;
  let checked: { at: number; answer: Promise<readonly Project[]> } | null = null;
  let warnedMissing = false;
  const check = async (): Promise<readonly Project[]> => {
    const mtimeMs = await stat(path).then(
      (s) => s.mtimeMs,
      (err: NodeJS.ErrnoException) => {
        if (err.code === "ENOENT") return null;
        throw err;
      },
    );
    if (mtimeMs === null) {
      if (!warnedMissing) log.warn({ path }, "PROJECTS_CONFIG_PATH does not exist: the repo allowlist is empty, every named repo is refused");
      warnedMissing = true;
      cached = { mtimeMs, projects: [] };
      return [];
    }
    if (cached?.mtimeMs === mtimeMs) return cached.projects;
    const projects = (await readProjectsFile(path)) ?? [];
    cached = { mtimeMs, projects };
    return projects;
  };
  return () => {
    const at = now();
    if (checked && at - checked.at < PROJECTS_RECHECK_MS) return checked.answer;
    const answer = check();
    const entry = { at, answer };
    checked = entry;
    // A failed check (unreadable, invalid) is not remembered: the next caller looks again.
    answer.catch(() => {
      if (checked === entry) checked = null;
    });
    return answer;
  };
}
