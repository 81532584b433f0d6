// Bad input at a boundary: one message that names every field and what it takes.
import type { z } from "zod";
import { InvalidInputError, type FieldProblem } from "./errors.js";

export { InvalidInputError };

/** Every issue as {field, problem}: the field's dotted path, and what it takes. */
export function issueList(error: z.ZodError): FieldProblem[] {
  return error.issues.map((issue) => {
    const field = issue.path.length > 0 ? issue.path.map(String).join(".") : "(top level)";
    if (issue.code === "unrecognized_keys") return { field, problem: `unknown field(s) ${issue.keys.map((k) => `"${k}"`).join(", ")}` };
    // Record keys and union members carry the useful message one level down.
    const nested = "issues" in issue && Array.isArray(issue.issues) ? (issue.issues as Array<{ message?: string } | Array<{ message?: string }>>).flat()[0] : undefined;
    return { field, problem: nested?.message ?? issue.message };
  });
}

export function formatIssues(error: z.ZodError): string {
  return issueList(error)
    .map(({ field, problem }) => (problem.startsWith("unknown field") && field === "(top level)" ? problem : `${field}: ${problem}`))
    .join("; ");
}

export function parseInput<S extends z.ZodType>(schema: S, data: unknown, what: string): z.infer<S> {
  const parsed = schema.safeParse(data);
  if (!parsed.success) throw new InvalidInputError(what, formatIssues(parsed.error), issueList(parsed.error));
  return parsed.data;
}
