// Prompt files in prompt_template_dir and the {{KEY}} arguments each phase gets.
//
// Files: prompt.md (single run); with parallel_implementers > 1: plan-prompt.md,
// implement-prompt.md (prompt.md when absent), review-prompt.md, merge-prompt.md.
//
// Arguments (Sandcastle also injects {{SOURCE_BRANCH}} / {{TARGET_BRANCH}} itself; a {{KEY}}
// with no value is an error, an unused one only a warning in Sandcastle's log):
//   every phase  RUN_ID, SESSION_ID, RUN_BRANCH (= request.branch), BRANCH (the branch this agent
//                works on), IMPL_COUNT (parallel_implementers)
//   implement,   IMPL_INDEX (1-based), PLAN (the planner's output: the text inside <plan>…</plan>
//   review       when present, else all of it), TASK (entry IMPL_INDEX of the plan when the plan is
//                JSON `{"tasks":[…]}` or `[…]`, else empty)
//   merge        PLAN, BRANCHES (markdown list "- b1\n- b2" of implementer branches with commits),
//                BRANCH_LIST (the same, space-separated)
import { accessSync, constants, readFileSync } from "node:fs";
import { join } from "node:path";
import type { ChildConfig } from "../contract.js";
import { RunFailure } from "./run-failure.js";

export type PromptArgs = Record<string, string | number | boolean>;
export type PromptKind = "run" | "plan" | "implement" | "review" | "merge";

const FILES: Readonly<Record<PromptKind, string>> = {
  run: "prompt.md",
  plan: "plan-prompt.md",
  implement: "implement-prompt.md",
  review: "review-prompt.md",
  merge: "merge-prompt.md",
};

const readable = (path: string) => {
  try {
    accessSync(path, constants.R_OK);
    return true;
  } catch {
    return false;
  }
};

export function promptFile(templateDir: string, kind: PromptKind): string {
  const path = join(templateDir, FILES[kind]);
  if (kind === "implement" && !readable(path)) return join(templateDir, FILES.run);
  return path;
}

/** The prompt files the request's shape needs; a missing one fails as invalid_payload. */
export function checkTemplate(templateDir: string, parallel: boolean): void {
  const kinds: PromptKind[] = parallel ? ["plan", "implement", "review", "merge"] : ["run"];
  const missing = kinds.map((k) => promptFile(templateDir, k)).filter((p) => !readable(p));
  if (missing.length > 0) {
    throw new RunFailure("invalid_payload", `request.prompt_template_dir: missing prompt file(s): ${missing.join(", ")}`);
  }
}

export function commonArgs(config: ChildConfig): PromptArgs {
  return {
    RUN_ID: config.run_id,
    SESSION_ID: config.request.session_id,
    RUN_BRANCH: config.request.branch,
    IMPL_COUNT: config.request.parallel_implementers,
  };
}

const PLACEHOLDER = /\{\{\s*([A-Za-z_][A-Za-z0-9_]*)\s*\}\}/g;

/**
 * Only the arguments the prompt file references: Sandcastle warns about unused ones through its
 * terminal UI, which is noise on the child's stdout. A referenced key with no value still fails.
 */
export function referencedArgs(file: string, args: PromptArgs): PromptArgs {
  const used = new Set([...readFileSync(file, "utf8").matchAll(PLACEHOLDER)].map((m) => m[1]));
  return Object.fromEntries(Object.entries(args).filter(([key]) => used.has(key)));
}

/** The planner's plan: the inside of its last <plan>…</plan>, else its whole output. */
export function extractPlan(stdout: string): string {
  const matches = [...stdout.matchAll(/<plan>([\s\S]*?)<\/plan>/g)];
  const last = matches.at(-1)?.[1];
  return (last ?? stdout).trim();
}

/** Task `index` (1-based) of a JSON plan (`{"tasks":[…]}` or `[…]`); empty when the plan is prose. */
export function taskFor(plan: string, index: number): string {
  let parsed: unknown;
  try {
    parsed = JSON.parse(plan);
  } catch {
    return "";
  }
  const tasks = Array.isArray(parsed)
    ? parsed
    : typeof parsed === "object" && parsed !== null && Array.isArray((parsed as { tasks?: unknown }).tasks)
      ? (parsed as { tasks: unknown[] }).tasks
      : [];
  const task: unknown = tasks[index - 1];
  if (task === undefined) return "";
  return typeof task === "string" ? task : JSON.stringify(task);
}
