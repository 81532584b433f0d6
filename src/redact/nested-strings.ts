// The strings inside a JSON value (an audit row, a child's record), nested ones included: redacting them one
// by one, never the serialised value, means a rule can never break the JSON around a string.

/** Every string inside a value, nested ones included, appended to `into`. */
export function stringsIn(value: unknown, into: string[] = []): string[] {
  if (typeof value === "string") into.push(value);
  else if (Array.isArray(value)) for (const v of value) stringsIn(v, into);
  else if (value !== null && typeof value === "object") for (const v of Object.values(value)) stringsIn(v, into);
  return into;
}

/** The value with every string inside it redacted. */
export function redactStrings(value: unknown, redact: (text: string) => string): unknown {
  if (typeof value === "string") return redact(value);
  if (Array.isArray(value)) return value.map((v) => redactStrings(v, redact));
  if (value !== null && typeof value === "object") {
    return Object.fromEntries(Object.entries(value).map(([k, v]) => [k, redactStrings(v, redact)]));
  }
  return value;
}
