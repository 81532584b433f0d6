// Exact secret values for one run and the encoded forms they take in output
// (after GitHub Actions' masker: base64 at 3 byte offsets, JSON, URI, XML, trimmed quotes).

/** Shorter values would mask unrelated text, so they are counted and skipped. */
export const MIN_SECRET_LENGTH = 6;

export interface KnownValues {
  /** Distinct strings to mask, longest first. */
  readonly values: readonly string[];
  /** Distinct non-blank secret values (or lines of multi-line values) shorter than MIN_SECRET_LENGTH. */
  readonly ignoredShort: number;
}

/**
 * The part of base64(prefix ‖ value) fixed by `value` alone when `offset` (0, 1, 2) bytes
 * precede it modulo 3: leading chars that mix in prefix bits and trailing chars that
 * mix in suffix bits are dropped, so it matches inside any longer blob.
 */
export function base64Fragment(value: string, offset: 0 | 1 | 2): string {
  const bytes = Buffer.from(value, "utf8");
  const encoded = Buffer.concat([Buffer.alloc(offset), bytes]).toString("base64");
  const start = offset === 0 ? 0 : offset + 1;
  const end = Math.floor(((offset + bytes.length) * 8) / 6);
  return encoded.slice(start, end);
}

function xmlEscape(value: string): string {
  return value
    .replace(/&/g, "&amp;")
    .replace(/</g, "&lt;")
    .replace(/>/g, "&gt;")
    .replace(/"/g, "&quot;")
    .replace(/'/g, "&apos;");
}

function uriEncode(value: string): string | undefined {
  try {
    return encodeURIComponent(value);
  } catch {
    return undefined; // lone surrogate
  }
}

/** Every form of one secret piece that is masked. */
export function encodedForms(value: string): string[] {
  const forms = [value, JSON.stringify(value).slice(1, -1), xmlEscape(value)];
  const uri = uriEncode(value);
  if (uri !== undefined) forms.push(uri);
  if (value.length > 2 && value.startsWith('"') && value.endsWith('"')) forms.push(value.slice(1, -1));
  for (const offset of [0, 1, 2] as const) {
    const fragment = base64Fragment(value, offset);
    forms.push(fragment, fragment.replace(/\+/g, "-").replace(/\//g, "_"));
  }
  return forms;
}

/** The value as given, trimmed, and for multi-line values each trimmed line on its own. */
function piecesOf(secret: string): string[] {
  const pieces = [secret, secret.trim()];
  if (/[\r\n]/.test(secret)) {
    for (const line of secret.split(/\r\n|\n|\r/)) pieces.push(line.trim());
  }
  return pieces;
}

export function collectKnownValues(secrets: Iterable<string>): KnownValues {
  const values = new Set<string>();
  const short = new Set<string>();
  for (const secret of secrets) {
    for (const piece of piecesOf(secret)) {
      if (piece.trim() === "") continue;
      if (piece.length < MIN_SECRET_LENGTH) {
        short.add(piece.trim());
        continue;
      }
      for (const form of encodedForms(piece)) {
        // Redaction works line by line, so a form spanning lines can never match; its lines are pieces of their own.
        if (form.length >= MIN_SECRET_LENGTH && !/[\r\n]/.test(form)) values.add(form);
      }
    }
  }
  return { values: [...values].sort((a, b) => b.length - a.length), ignoredShort: short.size };
}
