// PII redaction, run on every draft before it leaves the process (Telegram, Linear). Pure:
// configuration is passed in.
//
// Replaced, in this order (earlier passes protect later ones from partial matches):
//   [SECRET]        PEM private keys and the secret-shape catalogue's tokens (src/redact/key-shapes.ts:
//                   sk-…, sk_live_…, whsec_…, ghp_…, github_pat_…, glpat-…, AKIA…, AIza…, xox…-, JWTs,
//                   bot tokens, lin_api_…), "Bearer <token>", password/token/api_key=<value>, and the
//                   password in scheme://user:pass@host
//   [INTERNAL_URL]  URLs whose host is internal: localhost, *.localhost, *.internal, *.local,
//                   private/loopback/link-local IPs, and configured hosts (exact, or "*.suffix"
//                   for any subdomain of suffix); bare internal host names (with or without
//                   port and path) too
//   [EMAIL]         addresses
//   [IP]            IPv4 (not versions: "v1.2.3.4", "version 10.0.0.1" survive) and IPv6
//   [PHONE]         +international, US (555) 123-4567 / 555-123-4567, and national numbers
//                   with a leading 0 (0412 345 678, (02) 9876 5432, 1300/1800 numbers);
//                   never dates, versions, or ids such as RA-1856 or CVE-2024-34351
//   [CUSTOMER]      configured customer names, case-insensitive, whole words
//   [VENDOR]        configured vendor names (MARGOT_VENDOR_NAMES), the same way
// Public URLs (github.com, docs) and their paths survive.
import { isIPv4, isIPv6 } from "node:net";
import { z } from "zod";
import { escapeRegExp } from "../../escape-regexp.js";
import { hintTest } from "../../hints.js";
import { KEY_SHAPES, keyShape, keyShapeReplacement, PEM_BLOCK, PEM_HINT, urlPassword } from "../../redact/index.js";

export const PiiConfig = z
  .object({
    /** Extra internal hosts: "admin.example.com" (exact) or "*.corp.example.com" (subdomains). */
    internal_hosts: z.array(z.string().trim().min(1)).default([]),
    /** Customer names to hide; matched case-insensitively as whole words. */
    customer_names: z.array(z.string().trim().min(1)).default([]),
    /** Vendor names to hide; matched like customer names. */
    vendor_names: z.array(z.string().trim().min(1)).default([]),
  })
  .strict();
export type PiiConfig = z.input<typeof PiiConfig>;

export const PII_TOKENS = {
  email: "[EMAIL]",
  phone: "[PHONE]",
  ip: "[IP]",
  internal_url: "[INTERNAL_URL]",
  secret: "[SECRET]",
  customer: "[CUSTOMER]",
  vendor: "[VENDOR]",
} as const;

export type PiiKind = keyof typeof PII_TOKENS;
export type PiiCounts = Record<PiiKind, number>;

export interface PiiRedaction {
  text: string;
  counts: PiiCounts;
}

// ---------------------------------------------------------------- secrets

/** The catalogue's shapes of tokens (src/redact/key-shapes.ts); bearer tokens and URL passwords have passes of their own. */
const TOKEN_SHAPES = KEY_SHAPES.filter((shape) => shape.kind !== "bearer" && shape.kind !== "url-password");
const BEARER = keyShape("bearer");
const URL_PASSWORD = keyShape("url-password");
const KEY_NAME_HINT = /passw|pwd|secret|api[_-]?key|token/i;
const KEY_VALUE =
  /\b((?:password|passwd|pwd|secret|client[_-]?secret|api[_-]?key|access[_-]?token|auth[_-]?token|refresh[_-]?token|token)\s*[:=]\s*)(["']?)([^\s"',;]{8,})\2/gi;

// ---------------------------------------------------------------- hosts

const URL_PATTERN = /\b(?:https?|wss?|ftp|postgres(?:ql)?|redis|mysql|mongodb(?:\+srv)?):\/\/[^\s<>"'`]+/gi;
// A host-shaped token, optional port and path; the host itself is checked in code. Only a host with
// a dot, or localhost, can be internal: the lookahead spares the check for every other word.
const BARE_HOST = /(?<![\w@.:/-])(?=[a-z0-9.-]{0,252}\.|localhost)[a-z0-9][a-z0-9.-]{0,252}(?::\d{2,5})?(?:\/[^\s<>"'`]*)?/gi;
const HOSTNAME = /^(?:[a-z0-9](?:[a-z0-9-]{0,61}[a-z0-9])?\.)*[a-z0-9](?:[a-z0-9-]{0,61}[a-z0-9])?$/i;

function ipv4Private(host: string): boolean {
  const parts = host.split(".").map(Number);
  const [a = -1, b = -1] = parts;
  return (
    a === 10 ||
    a === 127 ||
    a === 0 ||
    (a === 172 && b >= 16 && b <= 31) ||
    (a === 192 && b === 168) ||
    (a === 169 && b === 254) ||
    (a === 100 && b >= 64 && b <= 127)
  );
}

function ipv6Private(host: string): boolean {
  const h = host.toLowerCase();
  return h === "::1" || h === "::" || /^f[cd][0-9a-f]{0,2}:/.test(h) || /^fe[89ab][0-9a-f]?:/.test(h) || /^::ffff:(?:10|127|192\.168)\./.test(h);
}

function hostMatches(host: string, pattern: string): boolean {
  const p = pattern.toLowerCase();
  if (p.startsWith("*.")) return host.endsWith(p.slice(1)) && host.length > p.length - 1;
  return host === p;
}

const ALWAYS_INTERNAL = ["localhost", "*.localhost", "*.internal", "*.local"];

function isInternalHost(rawHost: string, configured: readonly string[]): boolean {
  const host = rawHost.toLowerCase().replace(/^\[|\]$/g, "").replace(/\.$/, "");
  if (isIPv4(host)) return ipv4Private(host);
  if (isIPv6(host)) return ipv6Private(host);
  return [...ALWAYS_INTERNAL, ...configured].some((pattern) => hostMatches(host, pattern));
}

/** Split off sentence punctuation and unbalanced closing brackets: "(see http://x.internal/a)." */
function trailingPunctuation(match: string): [string, string] {
  let body = match;
  let tail = "";
  for (;;) {
    const last = body.at(-1) ?? "";
    const unbalanced =
      (last === ")" && (body.match(/\)/g) ?? []).length > (body.match(/\(/g) ?? []).length) ||
      (last === "]" && (body.match(/\]/g) ?? []).length > (body.match(/\[/g) ?? []).length);
    if (!/[.,;:!?]/.test(last) && !unbalanced) break;
    if (last === "") break;
    tail = last + tail;
    body = body.slice(0, -1);
  }
  return [body, tail];
}

// ---------------------------------------------------------------- addresses and numbers

const EMAIL = /(?<![\w.+-])[A-Za-z0-9._%+-]{1,64}@[A-Za-z0-9-]{1,63}(?:\.[A-Za-z0-9-]{1,63}){0,8}\.[A-Za-z]{2,24}\b/g;
const IPV4 = /(?<![\w.])(?:(?:25[0-5]|2[0-4]\d|1\d\d|[1-9]?\d)\.){3}(?:25[0-5]|2[0-4]\d|1\d\d|[1-9]?\d)(?![\w]|\.\d)/g;
const VERSION_LEAD = /(?:\bv|\bversion|\bver\.?|\brelease|\bbuild|\bsdk|@)\s*$/i;
const IPV6_CANDIDATE = /(?<![\w:.])(?:[0-9A-Fa-f]{0,4}:){2,7}(?:[0-9A-Fa-f]{0,4}|\d{1,3}(?:\.\d{1,3}){3})(?![\w:])/g;

/** Each pattern with a literal shape every one of its matches holds (a text without it skips the pattern). */
const PHONES: ReadonlyArray<{ pattern: RegExp; hint: RegExp }> = [
  // International: +CC then 2–6 groups.
  { pattern: /(?<![\w+])\+\d{1,3}(?:[\s.-]?(?:\(\d{1,4}\)|\d{1,4})){2,6}(?!\w)/g, hint: /\+\d/ },
  // US: (555) 123-4567, 555-123-4567, 555.123.4567, 555 123 4567.
  { pattern: /(?<![\w.+-])(?:\(\d{3}\)\s?|\d{3}[-.\s])\d{3}[-.\s]\d{4}(?![\w-]|\.\d)/g, hint: /\d{3}[-.\s]\d{4}/ },
  // National with trunk 0: (02) 9876 5432, 0412 345 678, 020 7946 0958.
  { pattern: /(?<![\w.+-])(?:\(0\d{1,4}\)\s?\d{3,4}[\s-]?\d{3,4}|0\d{1,4}[\s-]\d{3,4}[\s-]\d{3,4}|04\d{8})(?![\w-]|\.\d)/g, hint: /\d{3}[\s-]?\d{3}/ },
  // Australian 1300 / 1800 numbers.
  { pattern: /(?<![\w.+-])1[38]00[\s-]?\d{3}[\s-]?\d{3}(?![\w-]|\.\d)/g, hint: /\d{3}[\s-]?\d{3}/ },
];

function digitCount(s: string): number {
  let count = 0;
  for (let i = 0; i < s.length; i++) {
    const c = s.charCodeAt(i);
    if (c >= 48 && c <= 57) count++;
  }
  return count;
}

// ---------------------------------------------------------------- redact

/** Redact PII from `text` at standard strictness. Pure; `config` is validated. */
export function redactPii(text: string, config: PiiConfig = {}): PiiRedaction {
  return piiRedactor(config)(text);
}

/** How a redactor runs: `everyPass` runs each pass without its hint test (the reference the hints must equal). */
export interface PiiRedactorOptions {
  readonly everyPass?: boolean;
}

/** One replacement over the text, in order: what it matches, what it counts as, what replaces an accepted match. */
interface Pass {
  readonly pattern: RegExp;
  readonly kind: PiiKind;
  /** The replacement for a match at `offset` of `all`, or null to leave it. */
  readonly accept: (match: string, offset: number, all: string) => string | null;
  /** What every match holds: a text without it skips the pass (most drafts' fields hold few of them). */
  readonly hint?: (text: string) => boolean;
  /** What every match of a run of passes holds, tested once before the first of them (the same function object). */
  readonly gate?: (text: string) => boolean;
}

/** `redactPii` with the config validated and its passes built once, for many texts. */
export function piiRedactor(config: PiiConfig = {}, options: PiiRedactorOptions = {}): (text: string) => PiiRedaction {
  const passes = passesFor(PiiConfig.parse(config));
  const everyPass = options.everyPass === true;
  return (text) => redactWith(text, passes, everyPass);
}

function redactWith(text: string, passes: readonly Pass[], everyPass: boolean): PiiRedaction {
  const counts: PiiCounts = { email: 0, phone: 0, ip: 0, internal_url: 0, secret: 0, customer: 0, vendor: 0 };
  let out = text;
  let gate: ((text: string) => boolean) | undefined;
  let gateOpen = true;
  for (const pass of passes) {
    const { pattern, kind, accept, hint } = pass;
    if (pass.gate !== gate) {
      gate = pass.gate;
      gateOpen = everyPass || gate === undefined || gate(out);
    }
    if (!gateOpen || (hint && !everyPass && !hint(out))) continue;
    const all = out;
    out = out.replace(pattern, (...args: unknown[]) => {
      const match = args[0] as string;
      const offset = args.find((a, i) => i > 0 && typeof a === "number") as number;
      const replacement = accept(match, offset, all);
      if (replacement === null) return match;
      counts[kind]++;
      return replacement;
    });
  }
  return { text: out, counts };
}

/**
 * What every internal host name holds, in any case: "localhost", ".internal", ".local", or a configured host
 * (a "*.suffix" pattern: ".suffix"). Only a bare host can be internal without one, as an IP, and the bare-host
 * pass refuses IPs.
 */
function internalHostHint(configured: readonly string[]): RegExp {
  const literals = ["localhost", ".internal", ".local", ...configured.map((p) => (p.startsWith("*.") ? p.slice(1) : p))];
  return new RegExp(literals.map((l) => escapeRegExp(l.toLowerCase())).join("|"), "i");
}

const IPV4_HINT = /\d\.\d/;
/** Two colons with at most four hex digits between them: what every IPv6 candidate holds. */
const IPV6_HINT = /:[0-9A-Fa-f]{0,4}:/;

const hasScheme = hintTest(["://"]);
const hasAt = hintTest(["@"]);
const mayHoldTokenShape = hintTest([PEM_HINT, ...TOKEN_SHAPES.flatMap((shape) => shape.hints)]);
/** A phone number has at least 8 digits: a text with fewer holds none. */
const mayHoldPhone = (t: string) => digitCount(t) >= 8;

/** The passes, in order (earlier passes protect later ones from partial matches). */
function passesFor({ internal_hosts, customer_names, vendor_names }: z.output<typeof PiiConfig>): Pass[] {
  const internalHosts = internalHostHint(internal_hosts);
  // Longest names first across both lists, so "Acme Cloud" (vendor) wins over "Acme" (customer).
  const names = [
    ...customer_names.map((name) => ({ name: name.trim(), kind: "customer" as const })),
    ...vendor_names.map((name) => ({ name: name.trim(), kind: "vendor" as const })),
  ]
    .filter((n, i, all) => n.name !== "" && all.findIndex((m) => m.name.toLowerCase() === n.name.toLowerCase()) === i)
    .sort((a, b) => b.name.length - a.name.length);
  return [
    // Secrets: private keys and the catalogue's token shapes, then bearer tokens.
    { pattern: PEM_BLOCK, kind: "secret", accept: () => PII_TOKENS.secret, gate: mayHoldTokenShape },
    ...TOKEN_SHAPES.map((shape): Pass => ({
      pattern: new RegExp(shape.source, "g"),
      kind: "secret",
      accept: () => PII_TOKENS.secret,
      gate: mayHoldTokenShape,
    })),
    {
      pattern: new RegExp(BEARER.source, "g"),
      kind: "secret",
      accept: (m) => keyShapeReplacement("bearer", m, PII_TOKENS.secret),
      hint: hintTest(BEARER.hints),
    },
    {
      pattern: KEY_VALUE,
      kind: "secret",
      accept: (m) => {
        const parts = new RegExp(KEY_VALUE.source, "i").exec(m);
        const value = parts?.[3] ?? "";
        if (value.startsWith("[") || !/\d/.test(value) || !/[A-Za-z]/.test(value)) return null;
        return `${parts?.[1] ?? ""}${parts?.[2] ?? ""}${PII_TOKENS.secret}${parts?.[2] ?? ""}`;
      },
      hint: hintTest([KEY_NAME_HINT]),
    },
    // URLs on internal hosts, then bare internal host names.
    {
      pattern: URL_PATTERN,
      kind: "internal_url",
      accept: (m) => {
        const [url, tail] = trailingPunctuation(m);
        let host: string;
        try {
          host = new URL(url).hostname;
        } catch {
          return null;
        }
        return isInternalHost(host, internal_hosts) ? `${PII_TOKENS.internal_url}${tail}` : null;
      },
      hint: hasScheme,
    },
    {
      pattern: BARE_HOST,
      kind: "internal_url",
      accept: (m) => {
        const [token, tail] = trailingPunctuation(m);
        const host = /^[^:/]+/.exec(token)?.[0] ?? "";
        if (host.length > 253 || !HOSTNAME.test(host)) return null;
        if (isIPv4(host) || (!host.includes(".") && host.toLowerCase() !== "localhost")) return null;
        // Plain "localhost" in prose names no system; with a port or path it does.
        if (host.toLowerCase() === "localhost" && token === host) return null;
        return isInternalHost(host, internal_hosts) ? `${PII_TOKENS.internal_url}${tail}` : null;
      },
      hint: hintTest([internalHosts]),
    },
    // Passwords in URLs that stayed (public hosts); one already replaced stays as it is.
    {
      pattern: new RegExp(URL_PASSWORD.source, "g"),
      kind: "secret",
      accept: (m) => (urlPassword(m).startsWith("[") ? null : keyShapeReplacement("url-password", m, PII_TOKENS.secret)),
      hint: (t) => hasScheme(t) && hasAt(t),
    },
    { pattern: EMAIL, kind: "email", accept: () => PII_TOKENS.email, hint: hasAt },
    {
      pattern: IPV4,
      kind: "ip",
      accept: (_m, offset, all) => (VERSION_LEAD.test(all.slice(Math.max(0, offset - 12), offset)) ? null : PII_TOKENS.ip),
      hint: hintTest([IPV4_HINT]),
    },
    {
      pattern: IPV6_CANDIDATE,
      kind: "ip",
      accept: (m) => {
        if (!isIPv6(m) || !/[0-9a-f]/i.test(m.replace(/:/g, "")) || (m.match(/:/g) ?? []).length < 2) return null;
        // Clock times and ratios are not addresses: require a hex letter, "::", or 4+ groups.
        if (!/[a-f]/i.test(m) && !m.includes("::") && m.split(":").length < 4) return null;
        return PII_TOKENS.ip;
      },
      hint: hintTest([IPV6_HINT]),
    },
    ...PHONES.map(({ pattern, hint }): Pass => ({
      pattern,
      kind: "phone",
      accept: (m) => {
        const digits = digitCount(m);
        return digits >= 8 && digits <= 15 ? PII_TOKENS.phone : null;
      },
      hint: hintTest([hint]),
      gate: mayHoldPhone,
    })),
    ...names.map(({ name, kind }): Pass => {
      const pattern = new RegExp(`(?<![\\p{L}\\p{N}_])${name.split(/\s+/).map(escapeRegExp).join("\\s+")}(?![\\p{L}\\p{N}_])`, "giu");
      return { pattern, kind, accept: () => PII_TOKENS[kind] };
    }),
  ];
}
