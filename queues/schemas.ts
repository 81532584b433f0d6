// JSON Schema of every request and result a producer exchanges, generated from the zod schemas by zod's own
// converter (one source of truth): GET /v1/schemas serves them to producers in other languages, and the
// OpenAPI document (src/http/openapi.ts) is made of the same conversion. They are draft 2020-12 that a
// strict validator (ajv strict) takes: zod's own format names that are no JSON Schema format (`starts_with`
// from .startsWith(); its pattern says the same) are left out.
import { z } from "zod";
import { MargotIntentResult, MargotResearchCompletion } from "../src/margot/contract.js";
import { RunProgress, SandcastleRunRequest, SandcastleRunResult } from "../src/sandcastle/contract.js";
import { StatusReport } from "./status.js";

/** POST /v1/killswitch. */
export const KillSwitchRequest = z.object({ active: z.boolean({ error: "active takes true or false" }) }).strict();

/** Requests are described as they may be sent (defaults make fields optional); results as they come back. */
export type SchemaSide = "input" | "output";

/** The formats draft 2020-12 defines (§7.3 of its validation vocabulary); any other is a private name. */
const JSON_SCHEMA_FORMATS = new Set([
  "date-time", "date", "time", "duration", "email", "idn-email", "hostname", "idn-hostname", "ipv4", "ipv6",
  "uri", "uri-reference", "iri", "iri-reference", "uuid", "uri-template", "json-pointer", "relative-json-pointer", "regex",
]);

const options = (io: SchemaSide) =>
  ({
    target: "draft-2020-12",
    io,
    unrepresentable: "any",
    override: (ctx: { jsonSchema: Record<string, unknown> }) => {
      const format = ctx.jsonSchema.format;
      if (typeof format === "string" && !JSON_SCHEMA_FORMATS.has(format)) delete ctx.jsonSchema.format;
    },
  }) as const;

/** One schema, standalone (its own `$schema`). */
export function toJsonSchema(schema: z.ZodType, io: SchemaSide): Record<string, unknown> {
  return z.toJSONSchema(schema, options(io)) as Record<string, unknown>;
}

/**
 * Several schemas that refer to each other: a schema named here that appears inside another becomes
 * `{"$ref": refOf(name)}`. Each comes back without `$schema` and `$id`, to be placed where refOf points.
 */
export function toJsonSchemas(
  named: Readonly<Record<string, z.ZodType>>,
  io: SchemaSide,
  refOf: (name: string) => string,
): Record<string, Record<string, unknown>> {
  const registry = z.registry<{ id: string }>();
  for (const [id, schema] of Object.entries(named)) registry.add(schema, { id });
  const { schemas } = z.toJSONSchema(registry, { ...options(io), uri: refOf }) as { schemas: Record<string, Record<string, unknown>> };
  return Object.fromEntries(Object.entries(schemas).map(([id, { $schema: _s, $id: _i, ...schema }]) => [id, schema]));
}

export function jsonSchemas(): Record<string, unknown> {
  return {
    SandcastleRunRequest: toJsonSchema(SandcastleRunRequest, "input"),
    SandcastleRunResult: toJsonSchema(SandcastleRunResult, "output"),
    RunProgress: toJsonSchema(RunProgress, "output"),
    MargotResearchCompletion: toJsonSchema(MargotResearchCompletion, "input"),
    MargotIntentResult: toJsonSchema(MargotIntentResult, "output"),
    KillSwitchRequest: toJsonSchema(KillSwitchRequest, "input"),
    StatusReport: toJsonSchema(StatusReport, "output"),
  };
}
