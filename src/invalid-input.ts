// Bad input at a boundary: one message that names every field and what it takes, in the project's words
// (zod's own, "Invalid input: expected number, received string", reach nobody).
import type { z } from "zod";
import { InvalidInputError, type FieldProblem } from "./errors.js";

export { InvalidInputError };

/** The field of a problem with the whole payload (not an object, not JSON). */
export const WHOLE_PAYLOAD = "(top level)";

const TYPE_WORDS: Readonly<Record<string, string>> = {
  string: "a string",
  number: "a number",
  int: "a whole number",
  boolean: "true or false",
  object: "an object",
  array: "an array",
  null: "null",
  bigint: "a whole number",
  date: "a date",
};

/** What a JSON value is, in words: "a string", "an array", "null"… */
export function describeValue(value: unknown): string {
  if (value === null) return "null";
  if (Array.isArray(value)) return "an array";
  switch (typeof value) {
    case "string":
      return "a string";
    case "number":
      return Number.isInteger(value) ? "a whole number" : "a number";
    case "boolean":
      return value ? "true" : "false";
    case "object":
      return "an object";
    default:
      return typeof value;
  }
}

const quoted = (values: readonly unknown[]) => values.map((v) => JSON.stringify(v)).join(", ");
const count = (n: number | bigint, one: string, many: string) => `${n} ${Number(n) === 1 ? one : many}`;

type Issue = z.core.$ZodRawIssue;

/**
 * The project's words for zod's issues, for a parse's `error` option: a schema's own message (`{ error: … }`,
 * `.regex(re, "…")`) still wins. Undefined leaves zod's (a code added by a later zod, at worst).
 */
export function plainWording(issue: Issue): string | undefined {
  switch (issue.code) {
    case "invalid_type":
      if (issue.input === undefined) return "is required";
      return `must be ${TYPE_WORDS[issue.expected] ?? issue.expected}, not ${describeValue(issue.input)}`;
    case "invalid_value":
      return issue.values.length === 1 ? `must be ${quoted(issue.values)}` : `takes one of ${quoted(issue.values)}`;
    case "too_small": {
      const min = issue.minimum;
      if (issue.origin === "string") return Number(min) === 1 ? "must not be empty" : `must be at least ${count(min, "character", "characters")}`;
      if (issue.origin === "array" || issue.origin === "set")
        return Number(min) === 1 ? "must not be empty" : `must hold at least ${count(min, "item", "items")}`;
      return issue.inclusive ? `must be at least ${min}` : `must be greater than ${min}`;
    }
    case "too_big": {
      const max = issue.maximum;
      if (issue.origin === "string") return `must be at most ${count(max, "character", "characters")}`;
      if (issue.origin === "array" || issue.origin === "set") return `must hold at most ${count(max, "item", "items")}`;
      return issue.inclusive ? `must be at most ${max}` : `must be less than ${max}`;
    }
    case "invalid_format":
      if (issue.format === "starts_with" && "prefix" in issue) return `must start with ${JSON.stringify(issue.prefix)}`;
      if (issue.format === "regex") return "has a form this field does not take";
      if (issue.format === "datetime") return "must be an ISO 8601 datetime, e.g. 2026-09-17T03:04:05Z";
      return `must be a valid ${issue.format}`;
    case "not_multiple_of":
      return `must be a multiple of ${issue.divisor}`;
    case "unrecognized_keys":
      return "unknown field";
    case "invalid_union":
      return issue.input === undefined ? "is required" : "matches none of the forms this field takes";
    case "invalid_key":
      return "has a key this field does not take";
    case "invalid_element":
      return "holds a value this field does not take";
    case "custom":
      return "is not valid";
    default:
      return undefined;
  }
}

/**
 * Every issue as {field, problem}: the field's dotted path, and what it takes. An unknown field is named
 * itself (`colour`, `extra_env.X` is a key, not a field): one problem per unknown field.
 */
export function issueList(error: z.ZodError): FieldProblem[] {
  return error.issues.flatMap((issue) => {
    if (issue.code === "unrecognized_keys") return issue.keys.map((k) => ({ field: [...issue.path.map(String), k].join("."), problem: "unknown field" }));
    const field = issue.path.length > 0 ? issue.path.map(String).join(".") : WHOLE_PAYLOAD;
    // Record keys and union members carry the useful message one level down.
    const nested =
      "issues" in issue && Array.isArray(issue.issues) ? (issue.issues as Array<{ message?: string } | Array<{ message?: string }>>).flat()[0] : undefined;
    return [{ field, problem: nested?.message ?? issue.message }];
  });
}

export function formatIssues(error: z.ZodError): string {
  return issueList(error)
    .map(({ field, problem }) => `${field}: ${problem}`)
    .join("; ");
}

/** safeParse in the project's words. */
export function parseWithWording<S extends z.ZodType>(schema: S, data: unknown): z.ZodSafeParseResult<z.infer<S>> {
  return schema.safeParse(data, { error: plainWording }) as z.ZodSafeParseResult<z.infer<S>>;
}

export function parseInput<S extends z.ZodType>(schema: S, data: unknown, what: string): z.infer<S> {
  const parsed = parseWithWording(schema, data);
  if (!parsed.success) throw new InvalidInputError(what, formatIssues(parsed.error), issueList(parsed.error));
  return parsed.data;
}
