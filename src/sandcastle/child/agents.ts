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
export type ModelAgent = Exclude<SandcastleRunRequest["agent"], "script">;

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
  // claude refuses --dangerously-skip-permissions as root unless told it is in a sandbox: say so before it starts.
  if (request.agent === "claudeCode" && process.getuid?.() === 0 && env.IS_SANDBOX !== "1") {
    throw new RunFailure(
      "agent_unavailable",
      'claude refuses to run unattended as root on the host (--dangerously-skip-permissions): run the worker as a normal user, or for a dry run as root set "IS_SANDBOX": "1" in the request\'s extra_env',
    );
  }
}

/**
 * Sandcastle 0.12.0's claudeCode ends its command with `-p -`: `-p` is `--print` again and `-` becomes the prompt
 * argument, so the model reads `-` and a newline before the prompt that comes on stdin. `--print` with no prompt
 * argument reads it from stdin alone (ADR 0034).
 */
export function withoutDashPrompt(provider: AgentProvider): AgentProvider {
  return {
    ...provider,
    buildPrintCommand: (options) => {
      const print = provider.buildPrintCommand(options);
      return { ...print, command: print.command.replace(/ -p -$/, "") };
    },
  };
}

/**
 * `stdoutTo`: the script agent's stdout goes there, past Sandcastle (agent-stream.ts). `model`: the model as the
 * CLI takes it (agent-endpoints.ts); its documented default when the request names none.
 */
export function buildAgent(
  sc: Sandcastle,
  request: SandcastleRunRequest,
  env: Record<string, string>,
  runsOnHost: boolean,
  options: { stdoutTo?: string; model?: string } = {},
): AgentProvider {
  const provider = { env };
  const model = (agent: ModelAgent) => options.model ?? request.model ?? DEFAULT_MODELS[agent];
  switch (request.agent) {
    case "script":
      return scriptAgent({
        templateDir: request.prompt_template_dir,
        env,
        runsOnHost,
        ...(options.stdoutTo !== undefined ? { stdoutTo: options.stdoutTo } : {}),
      });
    case "claudeCode":
      return withoutDashPrompt(sc.claudeCode(model("claudeCode"), provider));
    case "codex":
      return sc.codex(model("codex"), provider);
    case "pi":
      return sc.pi(model("pi"), provider);
    case "opencode":
      return sc.opencode(model("opencode"), provider);
  }
}
