// The name rule: NAME_(KEY|TOKEN|SECRET|PASSWORD) followed by = or : and a value.
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
/** Literals of which every match holds one (see src/hints.ts). */
export const NAME_HINTS: readonly string[] = ["_KEY", "_TOKEN", "_SECRET", "_PASSWORD"];

export const NAME_REPLACEMENT = "***=[REDACTED]";

/** Same lines as `grep -E '[A-Z_]+_(KEY|TOKEN|SECRET|PASSWORD)\s*[=:]'`, anchored at a run start to stay linear. */
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

const isNameChar = (c: number): boolean => (c >= 65 && c <= 90) || (c >= 48 && c <= 57) || c === 95;
const isQuoteChar = (c: number): boolean => c === 34 || c === 92;

const NAME_AT = new RegExp(NAME_REDACTION.source, "y");
const NAME_HINTS_G = new RegExp(NAME_HINT.source, "g");

/** The rule's definition: one regex over the whole line. redactSecretNames gives the same result. */
export function redactSecretNamesWholeLine(line: string): string {
  return line.replace(NAME_REDACTION, replaceName);
}

/**
 * The same as redactSecretNamesWholeLine, without running the regex at every character: a match holds a
 * hint and starts where the name run around it starts (or at the \" or " just before), so only those
 * places are tried.
 */
export function redactSecretNames(line: string): string {
  NAME_HINTS_G.lastIndex = 0;
  let hint = NAME_HINTS_G.exec(line);
  if (hint === null) return line;
  let out = "";
  let copied = 0;
  while (hint !== null) {
    let run = hint.index;
    while (run > 0 && isNameChar(line.charCodeAt(run - 1))) run -= 1;
    let matched = false;
    // A run that began inside the previous match cannot start a match (every start in it follows a name char).
    for (let at = Math.max(run - 2, copied); at <= run && run >= copied; at++) {
      if (at < run && !(isQuoteChar(line.charCodeAt(at)) && (at === run - 1 || isQuoteChar(line.charCodeAt(at + 1))))) continue;
      NAME_AT.lastIndex = at;
      const m = NAME_AT.exec(line);
      if (m === null) continue;
      out += line.slice(copied, at) + replaceName(m[0], m[1], m[2], m[3], m[4]);
      copied = at + m[0].length;
      matched = true;
      break;
    }
    let next = matched ? copied : hint.index;
    if (!matched) while (next < line.length && isNameChar(line.charCodeAt(next))) next += 1;
    NAME_HINTS_G.lastIndex = next;
    hint = NAME_HINTS_G.exec(line);
  }
  return copied === 0 ? line : out + line.slice(copied);
}
