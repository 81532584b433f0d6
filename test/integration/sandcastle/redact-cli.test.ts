// `sandcastle-queue redact`: the log redactor as a stdin → stdout filter (needs no Redis).
import { describe, expect, it } from "vitest";
import { cliEnv, runCli } from "../../helpers/cli.js";

describe("redact command", () => {
  it("redacts env-var names followed by = or :, key shapes and PEM blocks line by line, and leaves other lines alone", async () => {
    const input = [
      "ANTHROPIC_API_KEY=sk-ant-fake-key-for-test",
      "plain line stays",
      "token ghp_" + "a".repeat(36),
      "-----BEGIN RSA PRIVATE KEY-----",
      "MIIEowIBAAKCAQEAu1SU1LfVLPHCozMxH2Mo4lgOEePzNm0tRgeLezV6ffAt0gunVTLw",
      "-----END RSA PRIVATE KEY-----",
      "after",
    ].join("\n");
    const res = await runCli(["redact"], cliEnv({ SCQ_DATA_DIR: "/nonexistent-not-needed" }), { input });
    expect(res.code, res.stderr).toBe(0);
    const out = res.stdout.split("\n");
    expect(out[0]).toBe("***=[REDACTED]");
    expect(out[1]).toBe("plain line stays");
    expect(out[2]).toMatch(/^token \[REDACTED:github\]$/);
    expect(out.slice(3, 6).join("\n")).not.toMatch(/MIIE|BEGIN RSA/);
    expect(out[6]).toBe("after");
    expect(res.stdout).not.toMatch(/[A-Z_]+_(KEY|TOKEN|SECRET|PASSWORD)\s*[=:]/);
  });
});
