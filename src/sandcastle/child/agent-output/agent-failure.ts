// Why a real agent's run failed, in the closed set and in words that name the cause and the fix (ADR 0034):
// what its CLI reported (agent-output.ts keeps its errors) and how it ended.
//   model_auth_failed   the endpoint refused the key (401, 403)
//   model_unavailable   the endpoint was overloaded or failing (429, 5xx, 529) after the CLI's own retries,
//                       could not be reached, or closed the stream mid-answer
//   agent_idle          the agent printed nothing for SANDCASTLE_AGENT_IDLE_SECONDS (an endpoint that never answers)
//   agent_unavailable   its CLI is not in the image
import { messageOf, RunFailure } from "../run-failure.js";
import type { AgentError } from "./agent-output.js";

export interface AgentFailureContext {
  readonly cli: string;
  readonly image: string | null;
  readonly keyVar: string | null;
  readonly baseUrlVar: string | null;
  readonly idleSeconds: number;
}

const OVERLOADED = /\b(overloaded|rate[ _-]?limit|too many requests|server_error|internal server error|service unavailable|bad gateway)\b/i;
const UNREACHABLE = /\b(ECONNREFUSED|ECONNRESET|ETIMEDOUT|ENOTFOUND|EAI_AGAIN|fetch failed|socket hang up|network error|connection (?:refused|reset|error|closed)|premature close|terminated|stream (?:ended|closed|disconnected)|unexpected end of|error decoding response body|stream error)\b/i;

function statusOf(errors: readonly AgentError[]): number | undefined {
  for (let i = errors.length - 1; i >= 0; i--) if (errors[i]!.status !== undefined) return errors[i]!.status;
  return undefined;
}

function tagOf(error: unknown): string | undefined {
  const tag = (error as { _tag?: unknown } | null)?._tag;
  if (typeof tag === "string") return tag;
  return error instanceof Error ? /^\(FiberFailure\) (\w+)/.exec(error.name)?.[1] : undefined;
}

export function agentFailure(error: unknown, errors: readonly AgentError[], ctx: AgentFailureContext): RunFailure | undefined {
  const message = messageOf(error);
  const endpoint = ctx.baseUrlVar !== null ? `its model endpoint (${ctx.baseUrlVar})` : "its model vendor";
  if (tagOf(error) === "AgentIdleTimeoutError" || /idle timeout|Agent idle for/i.test(message)) {
    return new RunFailure(
      "agent_idle",
      `the agent printed nothing for ${ctx.idleSeconds} s: ${endpoint} may not be answering, or a command it ran hangs; raise SANDCASTLE_AGENT_IDLE_SECONDS if its work is that quiet`,
    );
  }
  if (/exited with code 127\b/.test(message) || new RegExp(`\\b${ctx.cli}: (?:command )?not found`).test(message)) {
    return new RunFailure(
      "agent_unavailable",
      `the \`${ctx.cli}\` CLI is not in ${ctx.image !== null ? `the image ${ctx.image}` : "the sandbox"}: build the image with scripts/build-sandbox-image.sh (it installs claude, codex, pi and opencode; --agents picks some) or point SANDCASTLE_IMAGE or the request's image at one that has it`,
    );
  }
  if (/exited with code 137\b/.test(message)) {
    return new RunFailure(
      "agent_failed",
      `the agent's process was killed (exit 137: SIGKILL, most often the container's memory limit): raise SANDCASTLE_CONTAINER_MEMORY if ${ctx.cli} needs more`,
    );
  }
  const said = errors.map((e) => e.text).join(" | ");
  const status = statusOf(errors) ?? Number(/\b(401|403|429|5\d\d)\b/.exec(`${said} ${message}`)?.[1] ?? NaN);
  const last = errors.at(-1)?.text ?? message;
  if (status === 401 || status === 403) {
    return new RunFailure(
      "model_auth_failed",
      `${endpoint} refused the key (${status}): ${last}${ctx.keyVar !== null ? `; check ${ctx.keyVar} in the run's env manifest` : ""}`,
    );
  }
  if (status === 429 || (status >= 500 && status <= 599) || OVERLOADED.test(said)) {
    return new RunFailure(
      "model_unavailable",
      `${endpoint} was overloaded or failing${Number.isNaN(status) ? "" : ` (${status})`} after the agent's own retries: ${last}; try again later, or point ${ctx.baseUrlVar ?? "the run"} at another endpoint`,
    );
  }
  if (UNREACHABLE.test(said) || (errors.length > 0 && UNREACHABLE.test(message))) {
    return new RunFailure(
      "model_unavailable",
      `the agent lost ${endpoint}: ${last}; check that it is reachable from the run's container (SANDCASTLE_CONTAINER_NETWORK, ${ctx.baseUrlVar ?? "the base URL"})`,
    );
  }
  return undefined;
}
