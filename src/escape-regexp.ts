// A literal as regex source: every character that means something to a regex, escaped. Each escaped
// character is a syntax character, so the source is valid with the `u` and `v` flags too.

export function escapeRegExp(literal: string): string {
  return literal.replace(/[.*+?^${}()|[\]\\]/g, "\\$&");
}
