// The request fields of container runs: sandbox (built-ins and custom:<name>), image, network.
import { describe, expect, it } from "vitest";
import { effectiveSandbox, SandcastleRunRequest } from "../../../src/sandcastle/contract.js";

const base = { session_id: "s", prompt_template_dir: "/t", branch: "agent/x", repo_workdir: "/r", env_manifest_name: "m" };
const issues = (input: object) => {
  const parsed = SandcastleRunRequest.safeParse({ ...base, ...input });
  return parsed.success ? [] : parsed.error.issues.map((i) => `${i.path.join(".")}: ${i.message}`);
};

describe("sandcastle-run request: sandbox, image, network", () => {
  it("defaults: docker, the settings' image, the default network", () => {
    const r = SandcastleRunRequest.parse(base);
    expect([r.sandbox, r.image, r.network]).toEqual(["docker", undefined, "default"]);
  });

  it("takes custom:<name> with a plain name, and refuses anything else, naming the field", () => {
    expect(issues({ sandbox: "custom:local-process", dry_run: true })).toEqual([]);
    expect(issues({ sandbox: "custom:../x" })).toEqual([expect.stringMatching(/^sandbox: /)]);
    expect(issues({ sandbox: "custom:a/b" })).toEqual([expect.stringMatching(/^sandbox: /)]);
    expect(issues({ sandbox: "custom:" })).toEqual([expect.stringMatching(/^sandbox: /)]);
    expect(issues({ sandbox: "kubernetes" })).toEqual([expect.stringMatching(/^sandbox: .*"custom:<name>"/)]);
  });

  it("token_budget is a positive whole number of tokens", () => {
    expect(issues({ token_budget: 50_000 })).toEqual([]);
    for (const bad of [0, -5, 1.5, "1000"]) expect(issues({ token_budget: bad })).toEqual([expect.stringMatching(/^token_budget: /)]);
  });

  it("image must be a reference, never an option; network is default or none", () => {
    expect(issues({ image: "localhost/agent:1" })).toEqual([]);
    expect(issues({ image: "registry.example:5000/a/b@sha256:0123" })).toEqual([]);
    expect(issues({ image: "--privileged" })).toEqual([expect.stringMatching(/^image: must be an image reference/)]);
    expect(issues({ image: "a b" })).toEqual([expect.stringMatching(/^image: /)]);
    expect(issues({ network: "none" })).toEqual([]);
    expect(issues({ network: "host" })).toEqual([expect.stringMatching(/^network: /)]);
  });

  it("dry_run forces noSandbox for the built-ins; a custom provider is used as named, dry or not", () => {
    expect(effectiveSandbox({ sandbox: "podman", dry_run: true })).toBe("noSandbox");
    expect(effectiveSandbox({ sandbox: "podman", dry_run: false })).toBe("podman");
    expect(effectiveSandbox({ sandbox: "custom:p", dry_run: true })).toBe("custom:p");
  });
});

describe("sandcastle-run request: extra_env holds plain settings only", () => {
  it.each(["GH_PAT", "API_KEY_1", "PRIVATE_KEY_PEM", "SECRETS", "OPENAI_KEY_ID", "GITHUB_TOKEN", "DB_PASSWORD_FILE", "apiKey", "MYAPIKEY"])(
    "refuses the name %s, saying to use the manifest",
    (name) => {
      expect(issues({ extra_env: { [name]: "x" } })).toEqual([
        expect.stringMatching(new RegExp(`^extra_env\\.${name}: the name holds ".+", so it looks like a secret: put it in the run's env manifest`)),
      ]);
    },
  );

  it.each([
    ["DATABASE_URL", "postgres://u:p@h/db", "a URL with a password"],
    ["CLONE_FROM", "https://x:tok3n-value@example.com/o/r", "a URL with a password"],
    ["NOTE", `see sk-ant-${"a".repeat(20)}`, "what looks like a credential (anthropic)"],
  ])("refuses %s=%s: its value %s", (name, value, why) => {
    const found = issues({ extra_env: { [name]: value } });
    expect(found).toHaveLength(1);
    expect(found[0]).toContain(`extra_env.${name}: the value holds ${why}: put it in the run's env manifest`);
  });

  it("takes plain settings, words that only hold a secret word's letters included", () => {
    expect(issues({ extra_env: { PATH_PREFIX: "/opt/bin", MONKEY_MODE: "1", GIT_AUTHOR_NAME: "Bot", DATABASE_URL: "postgres://h/db", PATTERN: "a:b@c", LINES: "20000" } })).toEqual([]);
  });
});
