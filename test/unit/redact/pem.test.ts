import { describe, expect, it } from "vitest";
import { createLineRedactor, createRedactor, PEM_MAX_LINES, PEM_REPLACEMENT } from "../../../src/redact/index.js";

const BODY = ["MIIEowIBAAKCAQEAx1b2c3d4e5f6g7h8i9j0", "k1l2m3n4o5p6q7r8s9t0u1v2w3x4y5z6A7B8", "C9D0E1F2G3H4=="];
const block = (kind: string): string[] => [
  `-----BEGIN ${kind}PRIVATE KEY-----`,
  ...BODY,
  `-----END ${kind}PRIVATE KEY-----`,
];

describe("PEM private keys", () => {
  it.each(["", "RSA ", "EC ", "OPENSSH ", "ENCRYPTED "])("stream redactor masks a %sblock line by line", (kind) => {
    const stream = createLineRedactor(createRedactor());
    const out = ["before", ...block(kind), "after"].map(stream);
    expect(out).toEqual(["before", ...block(kind).map(() => PEM_REPLACEMENT), "after"]);
  });

  it("text() masks a block inside one multi-line string", () => {
    const redactor = createRedactor();
    const out = redactor.text(["error:", ...block("RSA "), "done API_KEY=1"].join("\n"));
    expect(out).toBe(["error:", ...block("RSA ").map(() => PEM_REPLACEMENT), "done ***=[REDACTED]"].join("\n"));
    for (const line of BODY) expect(out).not.toContain(line);
  });

  it("masks BEGIN…END on one line (JSON-escaped newlines) and keeps text around it", () => {
    const redactor = createRedactor();
    const line = JSON.stringify({ key: `${block("").join("\n")}\n`, n: 1 });
    expect(redactor.line(line)).toBe(`{"key":"${PEM_REPLACEMENT}\\n","n":1}`);
  });

  it("handles text after END and a second BEGIN on the same line", () => {
    const stream = createLineRedactor(createRedactor());
    expect(stream("-----BEGIN EC PRIVATE KEY-----")).toBe(PEM_REPLACEMENT);
    expect(stream("abc-----END EC PRIVATE KEY----- ok -----BEGIN PRIVATE KEY-----x")).toBe(
      `${PEM_REPLACEMENT} ok ${PEM_REPLACEMENT}`,
    );
    expect(stream(BODY[0] ?? "")).toBe(PEM_REPLACEMENT);
    expect(stream("-----END PRIVATE KEY-----")).toBe(PEM_REPLACEMENT);
    expect(stream("plain")).toBe("plain");
  });

  it("stateless line() masks from BEGIN to end of line but cannot see later lines", () => {
    const redactor = createRedactor();
    expect(redactor.line("key: -----BEGIN RSA PRIVATE KEY----- MIIE")).toBe(`key: ${PEM_REPLACEMENT}`);
    expect(redactor.line(BODY[0] ?? "")).toBe(BODY[0]);
  });

  it(`stops suppressing after ${PEM_MAX_LINES} lines without END`, () => {
    const stream = createLineRedactor(createRedactor());
    expect(stream("-----BEGIN PRIVATE KEY-----")).toBe(PEM_REPLACEMENT);
    for (let i = 0; i < PEM_MAX_LINES; i++) expect(stream(`body ${i}`)).toBe(PEM_REPLACEMENT);
    expect(stream("later output")).toBe("later output");
  });

  it("public keys and certificates are not suppressed", () => {
    const stream = createLineRedactor(createRedactor());
    for (const line of ["-----BEGIN PUBLIC KEY-----", "MIIBIjANBgkqhkiG9w0BAQEFAAOCAQ8A", "-----END PUBLIC KEY-----"]) {
      expect(stream(line)).toBe(line);
    }
  });

  it("separate stream redactors do not share state", () => {
    const redactor = createRedactor();
    const a = createLineRedactor(redactor);
    const b = createLineRedactor(redactor);
    a("-----BEGIN PRIVATE KEY-----");
    expect(b("hello")).toBe("hello");
    expect(a("hello")).toBe(PEM_REPLACEMENT);
  });
});
