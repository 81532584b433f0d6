// request.agent → a Sandcastle AgentProvider. config.env is the provider's `env` (Sandcastle merges
// it into the agent process's environment; the child's own process.env never holds it).
//
// Default models when request.model is unset (Sandcastle 0.12.0's own `init` defaults):
//   claudeCode → claude-opus-4-8   (CLI `claude`)
//   codex      → gpt-5.4           (CLI `codex`)
//   pi         → claude-sonnet-4-6 (CLI `pi`)
//   opencode   → opencode/big-pickle (CLI `opencode`)
//   script     → no model; runs <prompt_template_dir>/agent.sh
import type { AgentProvider } from "@ai-hero/sandcastle";
import type { SandcastleRunRequest } from "../contract.js";
import { findExecutable } from "../executables.js";
import { RunFailure } from "./run-failure.js";
import { checkScript, scriptAgent } from "./script-agent.js";

type Sandcastle = typeof import("@ai-hero/sandcastle");
type ModelAgent = Exclude<SandcastleRunRequest["agent"], "script">;

export const DEFAULT_MODELS: Readonly<Record<ModelAgent, string>> = {
  claudeCode: "claude-opus-4-8",
  codex: "gpt-5.4",
  pi: "claude-sonnet-4-6",
  opencode: "opencode/big-pickle",
};

export const AGENT_CLIS: Readonly<Record<ModelAgent, string>> = {
  claudeCode: "claude",
  codex: "codex",
  pi: "pi",
  opencode: "opencode",
};

/**
 * Fails `agent_unavailable` before anything starts when the agent cannot run: agent.sh missing
 * for `script`; for the others, when the agent runs on the host (noSandbox), its CLI not on PATH.
 * In a container or VM the CLI comes with the image and is not checked here.
 */
export function checkAgentAvailable(request: SandcastleRunRequest, runsOnHost: boolean, env: Record<string, string>): void {
  if (request.agent === "script") {
    checkScript(request.prompt_template_dir);
    return;
  }
  if (!runsOnHost) return;
  const cli = AGENT_CLIS[request.agent];
  const pathValue = env.PATH ?? process.env.PATH;
  if (findExecutable(cli, pathValue) === undefined) {
    throw new RunFailure(
      "agent_unavailable",
      `agent "${request.agent}" needs the \`${cli}\` CLI, which is not on PATH (install it on the host, or use a container sandbox whose image has it)`,
    );
  }
}

/** `stdoutTo`: the script agent's stdout goes there, past Sandcastle (agent-stream.ts). */
export function buildAgent(sc: Sandcastle, request: SandcastleRunRequest, env: Record<string, string>, runsOnHost: boolean, stdoutTo?: string): AgentProvider {
  const options = { env };
  switch (request.agent) {
    case "script":
      return scriptAgent({ templateDir: request.prompt_template_dir, env, runsOnHost, ...(stdoutTo !== undefined ? { stdoutTo } : {}) });
    case "claudeCode":
      return sc.claudeCode(request.model ?? DEFAULT_MODELS.claudeCode, options);
    case "codex":
      return sc.codex(request.model ?? DEFAULT_MODELS.codex, options);
    case "pi":
      return sc.pi(request.model ?? DEFAULT_MODELS.pi, options);
    case "opencode":
      return sc.opencode(request.model ?? DEFAULT_MODELS.opencode, options);
  }
}
