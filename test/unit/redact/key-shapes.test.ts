import { describe, expect, it } from "vitest";
import { redactPii } from "../../../src/margot/bridge/pii.js";
import { containsKeyShape, createRedactor, KEY_SHAPES } from "../../../src/redact/index.js";

const redactor = createRedactor();

/** Deterministic fake token body; built at runtime so no secret-looking literal sits in the repo. */
function body(alphabet: string, length: number): string {
  let out = "";
  for (let i = 0; i < length; i++) out += alphabet[(i * 7 + 3) % alphabet.length] ?? "";
  return out;
}
const ALNUM = "aB3cD4eF5gH6iJ7kL8mN9pQ2rS";
const URLSAFE = `${ALNUM}_-`;
const b64url = (value: string): string => Buffer.from(value).toString("base64url");

const SHAPES: readonly [kind: string, token: string][] = [
  ["anthropic", `sk-ant-api03-${body(URLSAFE, 93)}AA`],
  ["anthropic", `sk-ant-admin01-${body(URLSAFE, 93)}AA`],
  ["anthropic", "sk-ant-fake-key-for-test"],
  ["openai", `sk-${body(ALNUM, 48)}`],
  ["openai", `sk-proj-${body(URLSAFE, 64)}`],
  ["github", `ghp_${body(ALNUM, 36)}`],
  ["github", `gho_${body(ALNUM, 36)}`],
  ["github", `ghu_${body(ALNUM, 36)}`],
  ["github", `ghs_${body(ALNUM, 36)}`],
  ["github", `ghr_${body(ALNUM, 36)}`],
  ["github-pat", `github_pat_${body(`${ALNUM}_`, 82)}`],
  ["aws", `AKIA${body("ABCDEFGHIJKLMNOPQRSTUVWXYZ234567", 16)}`],
  ["aws", `ASIA${body("QRSTUVWXYZ234567", 16)}`],
  ["slack", `xoxb-1234567890-1234567890123-${body(ALNUM, 24)}`],
  ["slack", `xoxp-${body(`${ALNUM}-`, 40)}`],
  ["jwt", `${b64url('{"alg":"HS256","typ":"JWT"}')}.${b64url('{"sub":"1234567890","iat":1516239022}')}.${body(URLSAFE, 43)}`],
  ["telegram", `123456789:AA${body(URLSAFE, 33)}`],
  ["linear", `lin_api_${body(ALNUM, 40)}`],
];

describe("key shapes", () => {
  it.each([
    ["DATABASE_URL=postgres://app:hunter2hunter2@db.internal:5432/app", "DATABASE_URL=postgres://app:[REDACTED:url-password]@db.internal:5432/app"],
    ["clone https://x-access:tok3n_value@github.com/o/r.git now", "clone https://x-access:[REDACTED:url-password]@github.com/o/r.git now"],
    ["redis://:s3cretpass@localhost:6379/0", "redis://:[REDACTED:url-password]@localhost:6379/0"],
  ])("url-password: %s keeps all but the password", (line, expected) => {
    expect(redactor.line(line)).toBe(expected);
  });

  it.each(["https://example.com/a:b@c", "http://host:8080/path", "mailto:someone@example.com", "git@github.com:o/r.git"])("url-password: %s is no URL with a password", (line) => {
    expect(redactor.line(line)).toBe(line);
  });

  it.each(SHAPES)("%s: %s is replaced and named", (kind, token) => {
    const out = redactor.line(`value ${token} end`);
    expect(out).toBe(`value [REDACTED:${kind}] end`);
    expect(containsKeyShape(token)).toBe(true);
    expect(containsKeyShape(out)).toBe(false);
  });

  it("keeps the word Bearer and redacts the token", () => {
    const out = redactor.line(`Authorization: Bearer ${body(`${ALNUM}.`, 40)}`);
    expect(out).toBe("Authorization: Bearer [REDACTED:bearer]");
  });

  it("a JWT after Bearer is redacted once, as the bearer token", () => {
    const jwt = SHAPES.find(([kind]) => kind === "jwt")?.[1] ?? "";
    expect(redactor.line(`Bearer ${jwt}`)).toBe("Bearer [REDACTED:bearer]");
  });

  it.each([
    ["ordinary words", "the quick brown fox jumps over the lazy dog"],
    ["git SHA", "commit 3f2a9c1b7d4e5f60718293a4b5c6d7e8f9012345 merged"],
    ["UUID", "run 550e8400-e29b-41d4-a716-446655440000 started"],
    ["hyphenated word after sk-", "uses sk-learn-compatible-estimator-interface"],
    ["sk inside a word", "risk-assessment-framework-for-AI-systems-2024"],
    ["short ghp_", `ghp_${body(ALNUM, 20)}`],
    ["AKIA too short", `AKIA${body("ABCDEFGHIJKLMNOPQRSTUVWXYZ234567", 12)}`],
    ["prose Bearer", "Bearer tokens are nice; see Bearer authentication."],
    ["timestamp", "2024-01-01T12:34:56.789Z"],
    ["line:col", "src/index.ts:12345:67"],
    ["eyJ without payload", `${b64url('{"alg":"none"}')} alone`],
    ["telegram with 40-char tail", `12345:${"a".repeat(40)}`],
  ])("near miss survives: %s", (_label, line) => {
    expect(redactor.line(line)).toBe(line);
    expect(containsKeyShape(line)).toBe(false);
  });
});

// The log redactor and the Margot PII pass share the catalogue (src/redact/key-shapes.ts): a token one of them
// masks, the other masks too, and a near miss survives both.

/** Every shape above, and the kinds the log redactor took over from the PII pass's list. */
const TOKENS: readonly [kind: string, token: string][] = [
  ...SHAPES,
  ["openai", "sk-proj-abcdefghijklmnopqrstuv"],
  ["stripe", `sk_live_${body(ALNUM, 24)}`],
  ["stripe", `rk_test_${body(ALNUM, 24)}`],
  ["stripe-webhook", `whsec_${body(ALNUM, 32)}`],
  ["gitlab", `glpat-${body(URLSAFE, 20)}`],
  ["google", `AIza${body(URLSAFE, 35)}`],
  ["slack", `xoxo-1234567890-${body(ALNUM, 24)}`],
];

const NEAR_MISSES: readonly [label: string, text: string][] = [
  // GitHub's tokens are the prefix and 36 characters (30 random, a 6-character checksum).
  ["a ghp_ with 20 characters", `ghp_${body(ALNUM, 20)}`],
  ["a ghp_ with 35 characters", `ghp_${body(ALNUM, 35)}`],
  ["a hyphenated word after sk-", "sk-learn-compatible-estimator-interface"],
  ["a publishable Stripe key", `pk_live_${body(ALNUM, 24)}`],
  ["Bearer in prose", "Bearer tokens are nice; see Bearer authentication."],
];

describe("one secret-shape catalogue for logs and for what Margot sends out", () => {
  const logs = createRedactor();

  it("has each kind once", () => {
    expect(new Set(KEY_SHAPES.map((s) => s.kind)).size).toBe(KEY_SHAPES.length);
  });

  it.each(TOKENS)("%s: %s is masked in logs and in drafts", (kind, token) => {
    expect(logs.line(`key ${token} end`)).toBe(`key [REDACTED:${kind}] end`);
    expect(redactPii(`key ${token} end`).text).toBe("key [SECRET] end");
  });

  it.each(NEAR_MISSES)("%s survives both", (_label, text) => {
    expect(logs.line(text)).toBe(text);
    expect(redactPii(text).text).toBe(text);
  });

  it("a bearer token and a URL's password keep what is around them, in both", () => {
    const token = `${body(ALNUM, 20)}9`;
    expect(logs.line(`Authorization: Bearer ${token}`)).toBe("Authorization: Bearer [REDACTED:bearer]");
    expect(redactPii(`Authorization: Bearer ${token}`).text).toBe("Authorization: Bearer [SECRET]");
    expect(logs.line("redis://:s3cretpass@cache.example.com:6379/0")).toBe("redis://:[REDACTED:url-password]@cache.example.com:6379/0");
    expect(redactPii("redis://:s3cretpass@cache.example.com:6379/0").text).toBe("redis://:[SECRET]@cache.example.com:6379/0");
  });
});
