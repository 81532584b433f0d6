/**
 * Log redactor: applied to every line a child process prints before it is stored, and to
 * error messages and audit rows. Pure; no I/O.
 *
 *   const redactor = createRedactor({ secrets: [token, pem] });
 *   redactor.ignoredShortSecrets   // > 0 → warn: some values were too short to mask
 *   redactor.line(l)               // stateless; a PEM BEGIN without END on the line masks to end of line
 *   const stream = createLineRedactor(redactor);
 *   stream(l)                      // stateful: masks every line of a PEM block until END (max PEM_MAX_LINES)
 *   redactor.text(s)               // multi-line string, PEM blocks across lines included
 *   redactor.bytes(b)              // "\n"-separated UTF-8 lines, each as line() would; b itself when clean
 *
 * Per line, in order: PEM blocks → `[REDACTED:private-key]`; known values and their encodings
 * → `[REDACTED]`; key shapes → `[REDACTED:<kind>]`; `NAME_KEY=value` → `***=[REDACTED]`.
 * Lines with ANSI escapes are also checked with the escapes stripped; if that finds
 * something, the stripped, redacted line is returned.
 */
import { ANSI_ESCAPE, hasAnsi, stripAnsi } from "./ansi.js";
import { KEY_SHAPES, keyShapeReplacement } from "./key-shapes.js";
import { HintScanner } from "../hints.js";
import { collectKnownValues } from "./known-values.js";
import { literalAlternation } from "./literal-trie.js";
import { NAME_HINTS, redactSecretNames } from "./name-rule.js";
import { mayTouchPem, PEM_HINT, PEM_MAX_LINES, PEM_REPLACEMENT, splitPem } from "./pem.js";

export { containsKeyShape, KEY_SHAPES, keyShape, keyShapeIn, keyShapeReplacement, urlPassword } from "./key-shapes.js";
export type { KeyShape } from "./key-shapes.js";
export { base64Fragment, MIN_SECRET_LENGTH } from "./known-values.js";
export { containsSecretName, NAME_REPLACEMENT, NAME_RULE } from "./name-rule.js";
export { PEM_BLOCK, PEM_HINT, PEM_MAX_LINES, PEM_REPLACEMENT } from "./pem.js";
export { redactStrings, stringsIn } from "./nested-strings.js";

export const REDACTED = "[REDACTED]";

export interface Redactor {
  /** Redacts one line; pure. */
  line(text: string): string;
  /** Redacts a whole string line by line, tracking PEM blocks across lines. */
  text(multiline: string): string;
  /**
   * Redacts "\n"-separated lines given as UTF-8 bytes, each as line() does (stateless about PEM blocks).
   * Only lines that may hold a secret are decoded; returns `lines` itself when nothing was redacted.
   */
  bytes(lines: Buffer): Buffer;
  /**
   * False when line() and text() leave `text` as it is: it holds no hint, no PEM marker and no escape. One pass
   * settles many short strings at once (joined with "\n": no hint spans a line).
   */
  mayRedact(text: string): boolean;
  /** Distinct secret values (or lines of multi-line ones) not masked because they are shorter than MIN_SECRET_LENGTH. */
  readonly ignoredShortSecrets: number;
}

export interface RedactorOptions {
  /** Exact secret values known for this run. */
  readonly secrets?: Iterable<string>;
}

export type LineRedactor = (line: string) => string;

const KNOWN = "known";

const MAX_LITERAL_KNOWN_HINTS = 64;

/** Bits of the hint groups, in the order the scanners below are given them: which passes a line needs. */
const NAMES = 1;
const VALUES = 2;
const HIDDEN = 4;

/** One alternation for known values and all key shapes; group i+1 matched ⇔ kinds[i]. */
function buildValuePass(values: readonly string[]): { pattern: RegExp; kinds: readonly string[] } {
  const kinds: string[] = [];
  const groups: string[] = [];
  if (values.length > 0) {
    kinds.push(KNOWN);
    groups.push(`(${literalAlternation(values)})`);
  }
  for (const shape of KEY_SHAPES) {
    kinds.push(shape.kind);
    groups.push(`(${shape.source})`);
  }
  return { pattern: new RegExp(groups.join("|"), "g"), kinds };
}

export function createRedactor(opts: RedactorOptions = {}): Redactor {
  const known = collectKnownValues(opts.secrets ?? []);
  const { pattern, kinds } = buildValuePass(known.values);

  const replaceValue = (match: string, ...groups: unknown[]): string => {
    for (let i = 0; i < kinds.length; i++) {
      if (groups[i] === undefined) continue;
      const kind = kinds[i] ?? KNOWN;
      return kind === KNOWN ? REDACTED : keyShapeReplacement(kind, match);
    }
    return REDACTED;
  };

  // One indexOf pass per literal: past a few dozen values one alternation pass is cheaper.
  const knownHints = known.values.length <= MAX_LITERAL_KNOWN_HINTS ? known.values : [new RegExp(literalAlternation(known.values))];
  const valueHints = [...KEY_SHAPES.flatMap((shape) => shape.hints), ...knownHints];
  /** The passes a line's hints call for (neither pass can create the other's hints). */
  const redactAll = (line: string, groups: number): string => {
    const valued = groups & VALUES ? line.replace(pattern, replaceValue) : line;
    return groups & NAMES ? redactSecretNames(valued) : valued;
  };
  // Every rule is line-local, so a text of many lines is redacted line by line, skipping lines with no hint.
  const scanner = new HintScanner([NAME_HINTS, valueHints]);
  const redactFlat = (text: string): string => scanner.redact(text, redactAll);

  const redactPlain = (text: string): string => {
    if (!mayTouchPem(text)) return redactFlat(text);
    return joinSegments(splitPem(text, false).segments, redactFlat);
  };

  // ANSI escapes or a PEM marker can hide a secret from the hints, so such lines also go through line().
  const blockScanner = new HintScanner([NAME_HINTS, valueHints, [ANSI_ESCAPE, PEM_HINT]]);
  const blockLine = (line: string, groups: number): string => (groups & HIDDEN ? redactor.line(line) : redactAll(line, groups));

  const redactor: Redactor = {
    line(text: string): string {
      if (!hasAnsi(text)) return redactPlain(text);
      const stripped = stripAnsi(text);
      const redacted = redactPlain(stripped);
      return redacted === stripped ? redactPlain(text) : redacted;
    },
    text(multiline: string): string {
      // Every rule is line-local and the scan is line-aware: without escapes, PEM markers or lone CRs, one pass does all lines.
      if (!multiline.includes("\r") && !hasAnsi(multiline) && !mayTouchPem(multiline)) return redactFlat(multiline);
      const stream = createLineRedactor(redactor);
      const parts = multiline.split(/(\r\n|\n|\r)/);
      for (let i = 0; i < parts.length; i += 2) parts[i] = stream(parts[i] ?? "");
      return parts.join("");
    },
    bytes(lines: Buffer): Buffer {
      return blockScanner.redactBytes(lines, blockLine);
    },
    mayRedact(text: string): boolean {
      return hasAnsi(text) || mayTouchPem(text) || scanner.lines(text).length > 0;
    },
    ignoredShortSecrets: known.ignoredShort,
  };
  return redactor;
}

function joinSegments(
  segments: readonly { readonly text: string; readonly secret: boolean }[],
  redact: (text: string) => string,
): string {
  let out = "";
  for (const segment of segments) out += segment.secret ? PEM_REPLACEMENT : redact(segment.text);
  return out;
}

/** Stateful per-stream redactor: after a PEM BEGIN line, masks whole lines up to and including END. */
export function createLineRedactor(redactor: Redactor): LineRedactor {
  let inBlock = false;
  let blockLines = 0;
  return (line: string): string => {
    const view = hasAnsi(line) ? stripAnsi(line) : line;
    if (!inBlock && !mayTouchPem(view)) return redactor.line(line);
    const wasInBlock = inBlock;
    const split = splitPem(view, inBlock);
    inBlock = split.inBlock;
    if (!inBlock) blockLines = 0;
    else if (!wasInBlock || split.segments.length > 1) blockLines = 0;
    else if (++blockLines >= PEM_MAX_LINES) {
      inBlock = false;
      blockLines = 0;
    }
    return joinSegments(split.segments, redactor.line);
  };
}
