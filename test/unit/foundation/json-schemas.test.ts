// The JSON Schemas of GET /v1/schemas (and the OpenAPI document's components) are valid draft 2020-12 under
// ajv in strict mode, and as strict as the server where JSON Schema can say it: fast-check payloads wrong in
// one field, which the server refuses, are refused by the schema too — except the rules JSON Schema cannot
// state (extra_env's secret-shaped names and values), which are counted, not hidden.
import Ajv2020Module from "ajv/dist/2020.js";
import addFormatsModule from "ajv-formats";
import fc from "fast-check";
import { describe, expect, it } from "vitest";
import { z } from "zod";
import { jsonSchemas, toJsonSchema, toJsonSchemas } from "../../../queues/index.js";
import { ANSWER_COMPONENTS, REQUEST_COMPONENTS } from "../../../src/http/operations.js";
import { parseWithWording } from "../../../src/invalid-input.js";
import { MargotIntentResult, MargotResearchCompletion } from "../../../src/margot/contract.js";
import { SandcastleRunRequest } from "../../../src/sandcastle/contract.js";
import { badCompletion, badRunRequest } from "../../helpers/bad-payloads.js";

const Ajv2020 = (Ajv2020Module as unknown as { default: typeof Ajv2020Module.default }).default;
const addFormats = (addFormatsModule as unknown as { default: typeof addFormatsModule.default }).default;

/** ajv as strict as it goes: unknown keywords and formats, loose types, required without properties all throw. */
function strictAjv() {
  const ajv = new Ajv2020({ strict: true, allErrors: true });
  addFormats(ajv);
  return ajv;
}

const request = {
  session_id: "sess-1",
  agent: "script",
  sandbox: "noSandbox",
  dry_run: true,
  prompt_template_dir: "/srv/prompts/x",
  branch: "agent/t",
  repo_workdir: "/srv/repo",
  env_manifest_name: "proj",
  timeout_minutes: 1,
  extra_env: { OUT_DIR: "/tmp/out" },
};
const completion = { interaction_id: "int-1", body: "Some research text.", originated_at: "2026-09-17T03:04:05Z", originating_session_id: "sess-1" };

describe("JSON Schemas under ajv strict", () => {
  const schemas = jsonSchemas() as Record<string, Record<string, unknown>>;

  it("every schema of GET /v1/schemas compiles as draft 2020-12, with no private format (zod's starts_with was one)", () => {
    for (const [name, schema] of Object.entries(schemas)) {
      expect(schema.$schema, name).toBe("https://json-schema.org/draft/2020-12/schema");
      expect(() => strictAjv().compile(schema), name).not.toThrow();
    }
    expect(JSON.stringify(schemas)).not.toContain("starts_with");
    // The converter itself: zod writes .startsWith() as format "starts_with" (ajv strict throws on it) beside a pattern.
    const prefixed = toJsonSchema(z.string().startsWith("custom:").endsWith("!"), "input");
    expect(prefixed.format).toBeUndefined();
    expect(strictAjv().compile(prefixed)("custom:x!")).toBe(true);
    expect(strictAjv().compile(prefixed)("other:x!")).toBe(false);
  });

  it("the OpenAPI components (requests, answers, problems) compile together, their $refs resolving", () => {
    const refOf = (name: string) => `#/$defs/${name}`;
    const $defs = { ...toJsonSchemas(REQUEST_COMPONENTS, "input", refOf), ...toJsonSchemas(ANSWER_COMPONENTS, "output", refOf) };
    const ajv = strictAjv();
    ajv.addSchema({ $id: "urn:scq:components", $defs });
    for (const name of Object.keys($defs)) expect(() => ajv.getSchema(`urn:scq:components#/$defs/${name}`), name).not.toThrow();
  });

  it("SandcastleRunRequest: accepts a good request, refuses what the server refuses where JSON Schema can say it", () => {
    const validate = strictAjv().compile(schemas.SandcastleRunRequest!);
    expect(validate(request), JSON.stringify(validate.errors)).toBe(true);
    const refused: Array<[string, Record<string, unknown>]> = [
      ["relative prompt_template_dir", { prompt_template_dir: "prompts/x" }],
      ["relative repo_workdir", { repo_workdir: "./repo" }],
      ["env_manifest_name with ..", { env_manifest_name: "a..b" }],
      ["custom sandbox with a path", { sandbox: "custom:../evil" }],
      ["custom sandbox with no name", { sandbox: "custom:" }],
      ["noSandbox outside a dry run", { dry_run: false }],
      ["noSandbox, dry_run left to its default", { dry_run: undefined }],
      ["branch with ..", { branch: "agent/a..b" }],
      ["branch ending in .lock", { branch: "agent/x.lock" }],
      ["branch with /.", { branch: "agent/.hidden" }],
      ["timeout 0", { timeout_minutes: 0 }],
      ["unknown field", { colour: "blue" }],
    ];
    for (const [what, patch] of refused) {
      const payload = JSON.parse(JSON.stringify({ ...request, ...patch }));
      expect(parseWithWording(SandcastleRunRequest, payload).success, `server: ${what}`).toBe(false);
      expect(validate(payload), `schema: ${what}`).toBe(false);
    }
  });

  it("property: a run request or completion wrong in one field is refused by the schema as by the server (1,000 each)", () => {
    const runSchema = strictAjv().compile(schemas.SandcastleRunRequest!);
    const completionSchema = strictAjv().compile(schemas.MargotResearchCompletion!);
    // Secret-shaped extra_env names and values are the server's own judgement (plain-setting.ts): not a pattern.
    const unsayable: string[] = [];
    fc.assert(
      fc.property(badRunRequest(request), ({ field, payload }) => {
        const json = JSON.parse(JSON.stringify(payload ?? null)) as unknown;
        if (parseWithWording(SandcastleRunRequest, json).success) return; // JSON dropped what made it bad (an undefined)
        if (runSchema(json)) {
          expect(field, `the schema accepts ${JSON.stringify(json)}`).toBe("extra_env");
          unsayable.push(JSON.stringify((json as { extra_env: unknown }).extra_env));
        }
      }),
      { numRuns: 1000 },
    );
    for (const env of unsayable) expect(env).toMatch(/API_KEY|GITHUB_TOKEN/);
    fc.assert(
      fc.property(badCompletion(completion), ({ field, payload }) => {
        const json = JSON.parse(JSON.stringify(payload)) as unknown;
        expect(parseWithWording(MargotResearchCompletion, json).success).toBe(false);
        expect(completionSchema(json), `the schema accepts ${JSON.stringify(json)} (bad in ${field})`).toBe(false);
      }),
      { numRuns: 1000 },
    );
  });

  it("MargotResearchCompletion and MargotIntentResult: the refinements that are patterns or if/then in JSON Schema", () => {
    const validate = strictAjv().compile(schemas.MargotResearchCompletion!);
    expect(validate(completion)).toBe(true);
    for (const interaction_id of ["12345", "-7", "a:b", "has space", "tick`", "ctl\u0007"]) {
      expect(parseWithWording(MargotResearchCompletion, { ...completion, interaction_id }).success, interaction_id).toBe(false);
      expect(validate({ ...completion, interaction_id }), interaction_id).toBe(false);
    }
    const result = strictAjv().compile(schemas.MargotIntentResult!);
    const drafted = {
      interaction_id: "int-1",
      classification: "action_shaped",
      confidence: 0.9,
      action_summary: "x",
      target_repo: "a/b",
      draft_id: "d-1",
      skipped_reason: null,
      status: "drafted",
      reason: null,
    };
    expect(result(drafted), JSON.stringify(result.errors)).toBe(true);
    for (const bad of [
      { ...drafted, reason: "rate_limited" },
      { ...drafted, status: "informational", reason: null },
      { ...drafted, status: "informational", reason: "rate_limited" },
    ]) {
      expect(MargotIntentResult.safeParse(bad).success).toBe(false);
      expect(result(bad), JSON.stringify(bad)).toBe(false);
    }
    expect(result({ ...drafted, status: "informational", reason: "not_action_shaped" })).toBe(true);
  });
});
