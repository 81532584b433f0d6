// The seed's rule: NAME_(KEY|TOKEN|SECRET|PASSWORD) followed by = or : and a value.
// Env/YAML style becomes `***=[REDACTED]`; a quoted JSON key keeps the document valid: `"***":"[REDACTED]"`.

const NAME = "[A-Z0-9_]+_(?:KEY|TOKEN|SECRET|PASSWORD)";
const GAP = "[^\\S\\r\\n]*";
const QUOTED = [
  String.raw`"(?:[^"\\\r\n]|\\.)*"`,
  String.raw`\\"(?:[^"\\\r\n]|\\[^"\r\n])*\\"`,
  String.raw`'[^'\r\n]*'`,
].join("|");
const BARE_IN_QUOTES = String.raw`\\?"?(?:[^\s"\\]|\\[^"\s])+|\\?"`;

// Starts only where a name run starts (lookbehind) so a long run of A_A_A_ stays linear.
const QUOTED_NAME = `(\\\\?")${NAME}(\\\\?")?(${GAP}[=:]${GAP})(${QUOTED}|${BARE_IN_QUOTES})?`;
const BARE_NAME = `(?<![A-Z0-9_])${NAME}${GAP}[=:]${GAP}(?:${QUOTED}|\\S+)?`;

const NAME_REDACTION = new RegExp(`${QUOTED_NAME}|${BARE_NAME}`, "g");
const NAME_HINT = /_(?:KEY|TOKEN|SECRET|PASSWORD)/;

export const NAME_REPLACEMENT = "***=[REDACTED]";

/** Same lines as the seed's `grep -E '[A-Z_]+_(KEY|TOKEN|SECRET|PASSWORD)\s*[=:]'`, anchored at a run start to stay linear. */
export const NAME_RULE = /(?<![A-Z_])[A-Z_]+_(?:KEY|TOKEN|SECRET|PASSWORD)\s*[=:]/;

export function containsSecretName(text: string): boolean {
  return NAME_RULE.test(text);
}

function quoteOf(value: string): string | undefined {
  if (value.startsWith('\\"')) return '\\"';
  if (value.startsWith('"') || value.startsWith("'")) return value.charAt(0);
  return undefined;
}

function replaceName(
  _match: string,
  open: string | undefined,
  close: string | undefined,
  sep: string | undefined,
  value: string | undefined,
): string {
  if (open === undefined) return NAME_REPLACEMENT;
  if (close === undefined) return open + NAME_REPLACEMENT;
  const key = `${open}***${open}${sep ?? ":"}`;
  if (value === undefined) return key;
  const quote = quoteOf(value);
  if (quote !== undefined) return `${key}${quote}[REDACTED]${quote}`;
  // An unquoted JSON scalar cannot contain , } or ], so whatever follows them is structure.
  const cut = value.search(/[,}\]]/);
  return `${key}${open}[REDACTED]${open}${cut === -1 ? "" : value.slice(cut)}`;
}

export function redactSecretNames(line: string): string {
  if (!NAME_HINT.test(line)) return line;
  return line.replace(NAME_REDACTION, replaceName);
}
