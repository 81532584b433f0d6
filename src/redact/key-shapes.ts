// The catalogue of secret shapes recognisable without a name or a known value (after gitleaks' rules and
// each vendor's documented token format): the log redactor masks them as `[REDACTED:<kind>]`, the Margot
// PII pass (margot/bridge/pii.ts) as `[SECRET]`. One list, so both recognise the same secrets.
import type { Hint } from "../hints.js";

export interface KeyShape {
  readonly kind: string;
  /** Regex source without capturing groups. */
  readonly source: string;
  /** Every match holds at least one of these (see src/hints.ts). */
  readonly hints: readonly Hint[];
}

// Match only where a token run starts, so a long run of near-misses is scanned once, not once per char.
const TOKEN_START = "(?<![A-Za-z0-9_-])";

export const KEY_SHAPES: readonly KeyShape[] = [
  { kind: "anthropic", source: `${TOKEN_START}sk-ant-[A-Za-z0-9_-]{8,}`, hints: ["sk-ant-"] },
  // A project, service-account or admin key by its prefix; any other needs an upper-case letter or digit, so
  // hyphenated words like sk-learn-… survive.
  { kind: "openai", source: `${TOKEN_START}sk-(?:(?:proj|svcacct|admin)-[A-Za-z0-9_-]{16,}|(?=[a-z_-]*[A-Z0-9])[A-Za-z0-9_-]{20,})`, hints: ["sk-"] },
  // Stripe secret and restricted keys (publishable pk_ keys are public).
  { kind: "stripe", source: `${TOKEN_START}[sr]k_(?:live|test)_[A-Za-z0-9]{10,}`, hints: ["k_live_", "k_test_"] },
  { kind: "stripe-webhook", source: `${TOKEN_START}whsec_[A-Za-z0-9+/=]{16,}`, hints: ["whsec_"] },
  // GitHub's token format: the type's prefix, then 36 characters of [A-Za-z0-9] (30 random, a 6-character
  // CRC32 checksum); longer ones may come, shorter ones are not GitHub tokens.
  { kind: "github", source: `${TOKEN_START}gh[pousr]_[A-Za-z0-9]{36,}`, hints: ["ghp_", "gho_", "ghu_", "ghs_", "ghr_"] },
  { kind: "github-pat", source: `${TOKEN_START}github_pat_[A-Za-z0-9_]{20,}`, hints: ["github_pat_"] },
  { kind: "gitlab", source: `${TOKEN_START}glpat-[A-Za-z0-9_-]{20,}`, hints: ["glpat-"] },
  // Access key ids are base32 (A-Z, 2-7) after a four-character type prefix.
  { kind: "aws", source: String.raw`\b(?:A3T[A-Z0-9]|AKIA|ASIA|ABIA|ACCA)[A-Z2-7]{16}\b`, hints: ["A3T", "AKIA", "ASIA", "ABIA", "ACCA"] },
  { kind: "google", source: `${TOKEN_START}AIza[0-9A-Za-z_-]{35}`, hints: ["AIza"] },
  // Bot, user, app, refresh and legacy (xoxo, xoxs) tokens.
  { kind: "slack", source: `${TOKEN_START}xox[abposr]-[A-Za-z0-9-]{10,}`, hints: ["xox"] },
  { kind: "jwt", source: String.raw`${TOKEN_START}eyJ[A-Za-z0-9_-]{4,}\.eyJ[A-Za-z0-9_-]{4,}\.[A-Za-z0-9_-]*`, hints: ["eyJ"] },
  // Needs a digit or symbol so prose such as "Bearer authentication" survives.
  {
    kind: "bearer",
    source: String.raw`\b(?:Bearer|bearer|BEARER)[ \t]+(?=[A-Za-z.]*[0-9_~+/=-])[A-Za-z0-9._~+/=-]{8,}`,
    hints: ["Bearer", "bearer", "BEARER"],
  },
  // Bot tokens' secret part starts with "A" (gitleaks' telegram-bot-api-token rule asks for it too).
  { kind: "telegram", source: "(?<![0-9])[0-9]{5,16}:A[A-Za-z0-9_-]{34}(?![A-Za-z0-9_-])", hints: [":A"] },
  { kind: "linear", source: `${TOKEN_START}lin_api_[A-Za-z0-9]{20,}`, hints: ["lin_api_"] },
  // A URL's password (postgres://user:pass@host): only the password goes; scheme, user and host stay readable.
  { kind: "url-password", source: String.raw`(?<![A-Za-z0-9+.-])[A-Za-z][A-Za-z0-9+.-]*://[^\s/:@]*:[^\s/@]+@`, hints: ["://"] },
];

/** The shape of a kind (a kind of the catalogue). */
export function keyShape(kind: string): KeyShape {
  const shape = KEY_SHAPES.find((s) => s.kind === kind);
  if (!shape) throw new RangeError(`no key shape ${kind}`);
  return shape;
}

const ANY_KEY_SHAPE = new RegExp(KEY_SHAPES.map((shape) => `(?:${shape.source})`).join("|"));

export function containsKeyShape(text: string): boolean {
  return ANY_KEY_SHAPE.test(text);
}

/** The kind of the first key shape `text` holds, or null. */
export function keyShapeIn(text: string): string | null {
  if (!containsKeyShape(text)) return null;
  return KEY_SHAPES.find((shape) => new RegExp(shape.source).test(text))?.kind ?? null;
}

/** What replaces a match of the shape `kind`: `token` (by default `[REDACTED:<kind>]`), where a bearer's token or a URL's password was. */
export function keyShapeReplacement(kind: string, match: string, token = `[REDACTED:${kind}]`): string {
  if (kind === "url-password") {
    const passwordAt = match.indexOf(":", match.indexOf("://") + 3) + 1;
    return `${match.slice(0, passwordAt)}${token}@`;
  }
  if (kind !== "bearer") return token;
  const tokenStart = Math.max(match.lastIndexOf(" "), match.lastIndexOf("\t")) + 1;
  return `${match.slice(0, tokenStart)}${token}`;
}

/** The password a url-password match holds. */
export function urlPassword(match: string): string {
  return match.slice(match.indexOf(":", match.indexOf("://") + 3) + 1, -1);
}
