// Where each real agent's CLI sends its model requests, from the run's env (manifest values and extra_env):
//   ANTHROPIC_BASE_URL → claude (it reads the variable itself) and pi (an `anthropic-messages` provider);
//   OPENAI_BASE_URL    → codex (a Responses provider in config.toml: codex ignores the variable) and opencode
//                        (an OpenAI-compatible provider, Chat Completions), and pi when no Anthropic URL is set.
// The CLIs' config files go into the container's tmpfs home, never into the repository, and name the key's
// variable, never its value (codex `env_key`, pi's `apiKey` resolves a variable name, opencode `{env:…}`): the key
// itself reaches the agent only through the sourced secret file. The request's model reaches the endpoint as it
// is given: for pi and opencode the child defines the provider, so the model is `<provider>/<model>` on their
// command line and `<model>` on the wire. Without a base URL each CLI calls its vendor as it does by default.
// Each also gets the settings that keep it from side requests an unattended run has no use for (update checks,
// telemetry, model lists), unless the run's env sets them.
import type { SandcastleRunRequest } from "../contract.js";
import { DEFAULT_MODELS, type ModelAgent } from "./agents.js";

export interface HomeFile {
  /** Relative to the container's home. */
  readonly path: string;
  readonly content: string;
}

export interface AgentSetup {
  /** The model as Sandcastle's provider puts it on the CLI's command line. */
  readonly model: string;
  /** Plain settings added to the agent's env (the run's own values win). */
  readonly env: Readonly<Record<string, string>>;
  readonly homeFiles: readonly HomeFile[];
  /** The variables a failure message names: the key, and the endpoint when one was set. */
  readonly keyVar: string | null;
  readonly baseUrlVar: string | null;
}

const QUIET: Readonly<Record<ModelAgent, Readonly<Record<string, string>>>> = {
  claudeCode: { DISABLE_AUTOUPDATER: "1", CLAUDE_CODE_DISABLE_NONESSENTIAL_TRAFFIC: "1", DISABLE_TELEMETRY: "1", DISABLE_ERROR_REPORTING: "1" },
  codex: {},
  pi: { PI_OFFLINE: "1" },
  opencode: {
    OPENCODE_DISABLE_MODELS_FETCH: "1",
    OPENCODE_DISABLE_AUTOUPDATE: "1",
    OPENCODE_DISABLE_DEFAULT_PLUGINS: "1",
    OPENCODE_DISABLE_LSP_DOWNLOAD: "1",
    OPENCODE_DISABLE_SHARE: "1",
  },
};

/** The providers the child defines for pi and opencode. */
export const ANTHROPIC_PROVIDER = "scq-anthropic";
export const OPENAI_PROVIDER = "scq-openai";

const tomlString = (s: string) => JSON.stringify(s);

/** A provider-qualified default (`opencode/big-pickle`) names the model within its provider. */
const modelId = (model: string) => model.slice(model.indexOf("/") + 1);

export function agentSetup(agent: ModelAgent, request: Pick<SandcastleRunRequest, "model">, runEnv: Readonly<Record<string, string>>): AgentSetup {
  const model = request.model ?? DEFAULT_MODELS[agent];
  const anthropic = runEnv.ANTHROPIC_BASE_URL;
  const openai = runEnv.OPENAI_BASE_URL;
  const env = Object.fromEntries(Object.entries(QUIET[agent]).filter(([name]) => !(name in runEnv)));
  switch (agent) {
    case "claudeCode":
      return { model, env, homeFiles: [], keyVar: "ANTHROPIC_API_KEY", baseUrlVar: anthropic ? "ANTHROPIC_BASE_URL" : null };
    case "codex": {
      const provider = openai
        ? [
            `model_provider = "${OPENAI_PROVIDER}"`,
            "",
            `[model_providers.${OPENAI_PROVIDER}]`,
            `name = "${OPENAI_PROVIDER}"`,
            `base_url = ${tomlString(openai)}`,
            'env_key = "OPENAI_API_KEY"',
            'wire_api = "responses"',
            "",
          ]
        : [];
      // Offline, codex's exit waits ~5 s on its analytics upload: off.
      const config = [...provider, "[analytics]", "enabled = false", ""].join("\n");
      return {
        model,
        env,
        homeFiles: [{ path: ".codex/config.toml", content: config }],
        keyVar: "OPENAI_API_KEY",
        baseUrlVar: openai ? "OPENAI_BASE_URL" : null,
      };
    }
    case "pi": {
      const endpoint = anthropic
        ? { name: ANTHROPIC_PROVIDER, baseUrl: anthropic, api: "anthropic-messages", keyVar: "ANTHROPIC_API_KEY", baseUrlVar: "ANTHROPIC_BASE_URL" }
        : openai
          ? { name: OPENAI_PROVIDER, baseUrl: openai, api: "openai-completions", keyVar: "OPENAI_API_KEY", baseUrlVar: "OPENAI_BASE_URL" }
          : undefined;
      if (endpoint === undefined) return { model, env, homeFiles: [], keyVar: "ANTHROPIC_API_KEY", baseUrlVar: null };
      const models = { providers: { [endpoint.name]: { baseUrl: endpoint.baseUrl, api: endpoint.api, apiKey: endpoint.keyVar, models: [{ id: model }] } } };
      return {
        model: `${endpoint.name}/${model}`,
        env,
        homeFiles: [{ path: ".pi/agent/models.json", content: `${JSON.stringify(models, null, 2)}\n` }],
        keyVar: endpoint.keyVar,
        baseUrlVar: endpoint.baseUrlVar,
      };
    }
    case "opencode": {
      if (!openai) return { model, env, homeFiles: [], keyVar: null, baseUrlVar: null };
      const id = modelId(model);
      const config = {
        $schema: "https://opencode.ai/config.json",
        provider: {
          [OPENAI_PROVIDER]: {
            npm: "@ai-sdk/openai-compatible",
            name: OPENAI_PROVIDER,
            options: { baseURL: openai, apiKey: "{env:OPENAI_API_KEY}" },
            models: { [id]: {} },
          },
        },
      };
      return {
        model: `${OPENAI_PROVIDER}/${id}`,
        env,
        homeFiles: [{ path: ".config/opencode/opencode.json", content: `${JSON.stringify(config, null, 2)}\n` }],
        keyVar: "OPENAI_API_KEY",
        baseUrlVar: "OPENAI_BASE_URL",
      };
    }
  }
}
