// `classify --text-file FILE|-`: the intent router on one research body, as one JSON line.
// No Redis: classification, extraction and the rules that need no state (loop detection and
// the rate limit are left out; `route` says what the other rules would do).
import { loadConfig } from "../../config.js";
import { AppError } from "../../errors.js";
import { assess } from "../../margot/reading/assess.js";
import { readProjectsFile } from "../../margot/projects-file.js";
import { applyRules } from "../../margot/bridge/rules.js";
import { readTextSource } from "../input.js";

export async function classifyCommand(opts: { textFile?: string }): Promise<number> {
  if (!opts.textFile) throw new AppError("invalid_input", "classify needs --text-file FILE (or - for stdin)");
  const config = loadConfig();
  const text = await readTextSource(opts.textFile);
  const projects = (await readProjectsFile(config.PROJECTS_CONFIG_PATH).catch((err: Error) => {
    throw new AppError("invalid_input", err.message);
  })) ?? [];
  const { classification: result, action, destructiveVerbs: destructive } = assess(text, { projects, destructiveVerbs: config.destructiveVerbs });
  const route = applyRules({ classification: result, targetRepo: action?.target_repo ?? null, destructiveVerbs: destructive, projects, suppressedUntil: null });
  const line = {
    classification: result.classification,
    confidence: result.confidence,
    signals: result.signals,
    target_repo: action?.target_repo ?? null,
    target_candidates: action?.candidates ?? [],
    proposed_action: action?.proposed_action ?? null,
    proposed_branch: action?.proposed_branch ?? null,
    complexity_tier: action?.complexity_tier ?? null,
    max_files: action?.max_files ?? null,
    acceptance_criteria: action?.acceptance_criteria ?? [],
    out_of_scope: action?.out_of_scope ?? [],
    destructive_verbs: destructive,
    route: route.route === "draft" ? { status: "drafted", reason: null } : { status: route.status, reason: route.reason, explanation: route.explanation },
  };
  process.stdout.write(`${JSON.stringify(line)}\n`);
  return 0;
}
