// vercel / daytona: credentials from the run's env manifest become the provider's options, and leave the agent's env.
import { describe, expect, it } from "vitest";
import { providerCredentials } from "../../../src/sandcastle/child/provider-credentials.js";

describe("provider credentials", () => {
  it("vercel: token, team and project become options; none of them reaches the agent", () => {
    const env = { VERCEL_TOKEN: "vercel-token-value-123", VERCEL_TEAM_ID: "team_1", VERCEL_PROJECT_ID: "prj_1", ANTHROPIC_API_KEY: "sk-ant-x" };
    expect(providerCredentials("vercel", env)).toEqual({
      options: { token: "vercel-token-value-123", teamId: "team_1", projectId: "prj_1" },
      agentEnv: { ANTHROPIC_API_KEY: "sk-ant-x" },
    });
  });

  it("vercel: VERCEL_OIDC_TOKEN stands in for VERCEL_TOKEN; optional ones may be absent", () => {
    expect(providerCredentials("vercel", { VERCEL_OIDC_TOKEN: "oidc-1" }).options).toEqual({ token: "oidc-1" });
  });

  it("daytona: api key, url and target become options", () => {
    const env = { DAYTONA_API_KEY: "dtn_key", DAYTONA_API_URL: "https://app.daytona.io/api", DAYTONA_TARGET: "eu", OTHER: "1" };
    expect(providerCredentials("daytona", env)).toEqual({
      options: { apiKey: "dtn_key", apiUrl: "https://app.daytona.io/api", target: "eu" },
      agentEnv: { OTHER: "1" },
    });
  });

  it.each([
    ["vercel", /sandbox "vercel" needs VERCEL_TOKEN or VERCEL_OIDC_TOKEN in the run's env manifest/],
    ["daytona", /sandbox "daytona" needs DAYTONA_API_KEY in the run's env manifest/],
  ] as const)("%s without its credential: provider_unavailable, naming the variable (never a value)", (sandbox, message) => {
    try {
      providerCredentials(sandbox, { ANTHROPIC_API_KEY: "sk-ant-secret-value" });
      throw new Error("expected a refusal");
    } catch (error) {
      expect(error).toMatchObject({ reason: "provider_unavailable" });
      expect((error as Error).message).toMatch(message);
      expect((error as Error).message).not.toContain("sk-ant-secret-value");
    }
  });
});
