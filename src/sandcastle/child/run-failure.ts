// A run that cannot end `ok`, carrying the contract's failure reason.
import type { FailureReason } from "../contract.js";

export class RunFailure extends Error {
  override readonly name = "RunFailure";
  constructor(
    readonly reason: FailureReason,
    message: string,
  ) {
    super(message);
  }
}

/** Sandcastle's tagged errors that mean "the sandbox provider could not be used". */
const PROVIDER_ERROR_TAGS = new Set(["DockerError", "PodmanError"]);
const PROVIDER_CREATE_FAILED = /^Provider '[^']+' create failed:/;

/**
 * Maps anything a run can throw to a failure reason and a one-line message.
 * The message is the error's own text, never a stack trace; callers scrub it.
 */
export function classifyFailure(error: unknown): RunFailure {
  if (error instanceof RunFailure) return error;
  const tag = tagOf(error);
  const text = messageOf(error);
  if (tag !== undefined && PROVIDER_ERROR_TAGS.has(tag)) {
    return new RunFailure("provider_unavailable", `${tag}: ${text}`);
  }
  // startSandbox wraps a provider's create() failure (no image, no daemon, no credentials) in a WorktreeError.
  if (PROVIDER_CREATE_FAILED.test(text)) {
    return new RunFailure("provider_unavailable", text);
  }
  if (tag === "PromptError") {
    return new RunFailure("invalid_payload", `prompt template: ${text}`);
  }
  return new RunFailure("agent_failed", tag !== undefined ? `${tag}: ${text}` : text);
}

function tagOf(error: unknown): string | undefined {
  if (typeof error === "object" && error !== null && "_tag" in error) {
    const tag = (error as { _tag: unknown })._tag;
    if (typeof tag === "string") return tag;
  }
  // Effect's runPromise rejects with a FiberFailure named "(FiberFailure) <Tag>".
  if (error instanceof Error) {
    const match = /^\(FiberFailure\) (\w+)/.exec(error.name);
    if (match?.[1] !== undefined) return match[1];
  }
  return undefined;
}

export function messageOf(error: unknown): string {
  if (error instanceof Error) return firstLines(error.message || error.name);
  if (typeof error === "object" && error !== null && "message" in error) {
    const message = (error as { message: unknown }).message;
    if (typeof message === "string") return firstLines(message);
  }
  return firstLines(String(error));
}

/** Error texts from git and agents can run long: keep the head, on one line. */
function firstLines(text: string): string {
  const oneLine = text.trim().replace(/\s*\n\s*/g, " | ");
  return oneLine.length > 2000 ? `${oneLine.slice(0, 2000)}…` : oneLine;
}
