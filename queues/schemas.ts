// JSON Schema of every request and result a producer exchanges, generated from the zod schemas by zod's own
// converter (one source of truth): GET /v1/schemas serves it to producers in other languages.
import { z } from "zod";
import { MargotIntentResult, MargotResearchCompletion } from "../src/margot/contract.js";
import { RunProgress, SandcastleRunRequest, SandcastleRunResult } from "../src/sandcastle/contract.js";
import { StatusReport } from "./status.js";

/** POST /v1/killswitch. */
export const KillSwitchRequest = z.object({ active: z.boolean({ error: "active takes true or false" }) }).strict();

export function jsonSchemas(): Record<string, unknown> {
  // Requests are described as they may be sent (defaults make fields optional); results as they come back.
  const input = (schema: z.ZodType) => z.toJSONSchema(schema, { io: "input", unrepresentable: "any" });
  const output = (schema: z.ZodType) => z.toJSONSchema(schema, { io: "output", unrepresentable: "any" });
  return {
    SandcastleRunRequest: input(SandcastleRunRequest),
    SandcastleRunResult: output(SandcastleRunResult),
    RunProgress: output(RunProgress),
    MargotResearchCompletion: input(MargotResearchCompletion),
    MargotIntentResult: output(MargotIntentResult),
    KillSwitchRequest: input(KillSwitchRequest),
    StatusReport: output(StatusReport),
  };
}
