// Bad input at a boundary: one message that names every field and what it takes.
import type { z } from "zod";
import { InvalidInputError } from "./errors.js";

export { InvalidInputError };

export function formatIssues(error: z.ZodError): string {
  return error.issues
    .map((issue) => {
      const field = issue.path.length > 0 ? issue.path.map(String).join(".") : "(top level)";
      if (issue.code === "unrecognized_keys") return `${field === "(top level)" ? "" : `${field}: `}unknown field(s) ${issue.keys.map((k) => `"${k}"`).join(", ")}`;
      // Record keys and union members carry the useful message one level down.
      const nested = "issues" in issue && Array.isArray(issue.issues) ? (issue.issues as Array<{ message?: string } | Array<{ message?: string }>>).flat()[0] : undefined;
      return `${field}: ${nested?.message ?? issue.message}`;
    })
    .join("; ");
}

export function parseInput<S extends z.ZodType>(schema: S, data: unknown, what: string): z.infer<S> {
  const parsed = schema.safeParse(data);
  if (!parsed.success) throw new InvalidInputError(what, formatIssues(parsed.error));
  return parsed.data;
}
