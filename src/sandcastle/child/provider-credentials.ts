// vercel / daytona: the credentials that open the provider are named in the run's env manifest like any
// secret, and handed to the provider's options here, inside the child: never to the child's env (the SDKs
// would fall back to process.env) and never to the agent inside the sandbox they open.
import { RunFailure } from "./run-failure.js";

type Remote = "vercel" | "daytona";

interface Credential {
  readonly option: string;
  /** First name set wins. */
  readonly names: readonly string[];
  readonly required: boolean;
}

const CREDENTIALS: Readonly<Record<Remote, readonly Credential[]>> = {
  vercel: [
    { option: "token", names: ["VERCEL_TOKEN", "VERCEL_OIDC_TOKEN"], required: true },
    { option: "teamId", names: ["VERCEL_TEAM_ID"], required: false },
    { option: "projectId", names: ["VERCEL_PROJECT_ID"], required: false },
  ],
  daytona: [
    { option: "apiKey", names: ["DAYTONA_API_KEY"], required: true },
    { option: "apiUrl", names: ["DAYTONA_API_URL"], required: false },
    { option: "target", names: ["DAYTONA_TARGET"], required: false },
  ],
};

export interface ProviderCredentials {
  /** For vercel({...}) / daytona({...}). */
  readonly options: Record<string, string>;
  /** The run's env without the provider's credentials: what the agent gets. */
  readonly agentEnv: Record<string, string>;
}

export function providerCredentials(sandbox: Remote, env: Readonly<Record<string, string>>): ProviderCredentials {
  const options: Record<string, string> = {};
  const agentEnv: Record<string, string> = { ...env };
  for (const credential of CREDENTIALS[sandbox]) {
    const name = credential.names.find((n) => env[n] !== undefined && env[n] !== "");
    if (name !== undefined) options[credential.option] = env[name]!;
    else if (credential.required) {
      throw new RunFailure(
        "provider_unavailable",
        `sandbox "${sandbox}" needs ${credential.names.join(" or ")} in the run's env manifest (named there, valued in the worker's env)`,
      );
    }
    for (const n of credential.names) delete agentEnv[n];
  }
  return { options, agentEnv };
}
