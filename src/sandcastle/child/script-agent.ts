// Agent `script`: a Sandcastle AgentProvider that runs `<prompt_template_dir>/agent.sh` with the
// resolved prompt on stdin; each stdout line is a text event. For smoke tests and CI of the whole
// pipeline with no model behind it. The script must commit its own work: Sandcastle collects
// commits, it does not make them.
import { accessSync, constants, readFileSync } from "node:fs";
import { join } from "node:path";
import type { AgentProvider } from "@ai-hero/sandcastle";
import { shellQuote } from "../shell-quote.js";
import { RunFailure } from "./run-failure.js";

export const SCRIPT_FILE = "agent.sh";


export function scriptPath(templateDir: string): string {
  return join(templateDir, SCRIPT_FILE);
}

export function checkScript(templateDir: string): void {
  const path = scriptPath(templateDir);
  try {
    accessSync(path, constants.R_OK);
  } catch {
    throw new RunFailure("agent_unavailable", `agent "script" needs ${path}, which is missing or unreadable`);
  }
}

function isExecutable(path: string): boolean {
  try {
    accessSync(path, constants.X_OK);
    return true;
  } catch {
    return false;
  }
}

/**
 * On the host (noSandbox) the script runs from its own path. In a container or VM the host path
 * does not exist, so its text travels in the command itself (`sh -c <text>`), run by the
 * interpreter its shebang names (bash when it says bash, else sh).
 */
function commandFor(path: string, runsOnHost: boolean, stdoutTo: string | undefined): string {
  if (runsOnHost) {
    const redirect = stdoutTo !== undefined ? ` > ${shellQuote(stdoutTo)}` : "";
    return `exec ${isExecutable(path) ? "" : "sh "}${shellQuote(path)}${redirect}`;
  }
  const text = readFileSync(path, "utf8");
  const shebang = text.startsWith("#!") ? text.slice(0, text.indexOf("\n")) : "";
  const interpreter = /\bbash\b/.test(shebang) ? "bash" : "sh";
  return `exec ${interpreter} -c ${shellQuote(text)} ${SCRIPT_FILE}`;
}

/** `stdoutTo` (on the host only): a path the script's stdout goes to instead of Sandcastle (agent-stream.ts). */
export function scriptAgent(options: { templateDir: string; env: Record<string, string>; runsOnHost: boolean; stdoutTo?: string }): AgentProvider {
  const command = commandFor(scriptPath(options.templateDir), options.runsOnHost, options.stdoutTo);
  return {
    name: "script",
    env: options.env,
    captureSessions: false,
    buildPrintCommand: ({ prompt }) => ({ command, stdin: prompt }),
    parseStreamLine: (line) => [{ type: "text", text: `${line}\n` }],
  };
}
