// Loads a `custom:<name>` provider module (custom-providers.ts finds it) and checks what its factory
// returns: a bind-mount or isolated Sandcastle provider. A provider with tag "none" runs the agent on the
// host, which only noSandbox may do (and only in a dry run), so it is refused.
import { pathToFileURL } from "node:url";
import type { SandboxProvider } from "@ai-hero/sandcastle";
import { findCustomProvider } from "../containers/custom-providers.js";
import { RunFailure, messageOf } from "./run-failure.js";

/** What a provider factory is handed; it may ignore it. */
export interface CustomProviderContext {
  readonly runId: string;
}

export type ProviderFactory = (context: CustomProviderContext) => SandboxProvider;

export async function loadCustomProvider(dir: string | null, name: string): Promise<ProviderFactory> {
  const sandbox = `custom:${name}`;
  const found = findCustomProvider(dir, name);
  if ("problem" in found) throw new RunFailure("provider_unavailable", `sandbox "${sandbox}": ${found.problem}`);
  let mod: { default?: unknown };
  try {
    mod = (await import(pathToFileURL(found.path).href)) as { default?: unknown };
  } catch (error) {
    throw new RunFailure("provider_unavailable", `sandbox "${sandbox}": ${found.path} failed to load: ${messageOf(error)}`);
  }
  const factory = mod.default;
  if (typeof factory !== "function") {
    throw new RunFailure(
      "provider_unavailable",
      `sandbox "${sandbox}": ${found.path} must export a provider factory as its default export (got ${typeof factory})`,
    );
  }
  return (context) => {
    const provider = (factory as (c: CustomProviderContext) => unknown)(context);
    const tag = typeof provider === "object" && provider !== null ? (provider as { tag?: unknown }).tag : undefined;
    if (tag !== "bind-mount" && tag !== "isolated") {
      throw new RunFailure(
        "provider_unavailable",
        `sandbox "${sandbox}": the factory must return a provider made with createBindMountSandboxProvider or createIsolatedSandboxProvider (got ${tag === "none" ? "a no-sandbox provider" : "something else"})`,
      );
    }
    return provider as SandboxProvider;
  };
}
