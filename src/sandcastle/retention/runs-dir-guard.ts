// A retained workspace is never mounted into another run: a request whose repo_workdir or prompt_template_dir
// lies in RUNS_DIR is refused, at enqueue and again in the worker's pre-flight. Both sides are compared with
// every symlink and `..` resolved, so neither a link into RUNS_DIR nor a detour through one gets past.
import { realpath } from "node:fs/promises";
import { basename, dirname, isAbsolute, join, relative, resolve } from "node:path";
import type { FieldProblem } from "../../errors.js";
import type { SandcastleRunRequest } from "../contract.js";

export const RUNS_DIR_GUARDED_FIELDS = ["repo_workdir", "prompt_template_dir"] as const;

/** `path` as the kernel would resolve it, as far as it exists; the missing rest joined on as written. */
export async function resolvedPath(path: string): Promise<string> {
  const abs = isAbsolute(path) ? path : resolve(path);
  try {
    return await realpath(abs);
  } catch {
    const parent = dirname(abs);
    // `dirname` keeps a `..` before the missing part, so realpath resolves it past any symlink, as the kernel would.
    return parent === abs ? abs : join(await resolvedPath(parent), basename(abs));
  }
}

function inside(dir: string, path: string): boolean {
  const rel = relative(dir, path);
  return rel === "" || (rel !== ".." && !rel.startsWith("../") && !isAbsolute(rel));
}

/** One problem per guarded field that lies in RUNS_DIR (or is it); none when the request stays out of it. */
export async function runsDirProblems(runsDir: string, request: Pick<SandcastleRunRequest, (typeof RUNS_DIR_GUARDED_FIELDS)[number]>): Promise<FieldProblem[]> {
  const root = await resolvedPath(runsDir);
  const problems: FieldProblem[] = [];
  for (const field of RUNS_DIR_GUARDED_FIELDS) {
    const given = request[field];
    const real = await resolvedPath(given);
    if (!inside(root, real)) continue;
    const via = real !== resolve(given) || root !== resolve(runsDir) ? ` (it resolves to ${real}, RUNS_DIR to ${root})` : "";
    problems.push({ field, problem: `${given} lies inside RUNS_DIR ${runsDir}${via}: retained run workspaces are never mounted into another run` });
  }
  return problems;
}
