import { describe, expect, it } from "vitest";
import { base64Fragment, createRedactor, MIN_SECRET_LENGTH, REDACTED } from "../../../src/redact/index.js";

const SECRET = "s3cr3t-Väl/ue+42";

/** base64 of prefix+secret+suffix must lose every char fixed by secret bytes alone, and nothing else. */
function expectBase64Masked(prefix: string, suffix: string): void {
  const redactor = createRedactor({ secrets: [SECRET] });
  const blob = Buffer.from(prefix + SECRET + suffix).toString("base64");
  const out = redactor.line(`data: ${blob}`);
  const before = Buffer.byteLength(prefix) * 8;
  const after = (Buffer.byteLength(prefix) + Buffer.byteLength(SECRET)) * 8;
  const first = Math.ceil(before / 6);
  const last = Math.floor(after / 6);
  expect(out).toBe(`data: ${blob.slice(0, first)}${REDACTED}${blob.slice(last)}`);
}

describe("known values", () => {
  it("masks the raw value anywhere in a line", () => {
    const redactor = createRedactor({ secrets: [SECRET] });
    expect(redactor.line(`a${SECRET}b ${SECRET}`)).toBe(`a${REDACTED}b ${REDACTED}`);
  });

  it.each([
    ["", ""],
    ["a", ""],
    ["ab", "cd"],
    ["abc", "x"],
    ["user:", ""],
    ["abcd", "efgh"],
  ])("masks base64 inside a longer blob (prefix %j, suffix %j)", (prefix, suffix) => {
    expectBase64Masked(prefix, suffix);
  });

  it("masks the url-safe base64 alphabet too", () => {
    const redactor = createRedactor({ secrets: ["??>>??>>??>>"] });
    const blob = Buffer.from("x??>>??>>??>>").toString("base64url");
    expect(redactor.line(blob)).toContain(REDACTED);
  });

  it("base64Fragment covers offsets 0, 1 and 2", () => {
    for (const offset of [0, 1, 2] as const) {
      const blob = Buffer.from("p".repeat(offset) + SECRET).toString("base64");
      expect(blob).toContain(base64Fragment(SECRET, offset));
    }
  });

  it("masks URL-encoded, JSON-escaped and XML-escaped forms", () => {
    const secret = 'p@ss "w/rd" & <x>?';
    const redactor = createRedactor({ secrets: [secret] });
    const url = `https://h/?q=${encodeURIComponent(secret)}&x=1`;
    expect(redactor.line(url)).toBe(`https://h/?q=${REDACTED}&x=1`);
    const json = JSON.stringify({ v: secret });
    expect(redactor.line(json)).toBe(`{"v":"${REDACTED}"}`);
    const xml = "<v>p@ss &quot;w/rd&quot; &amp; &lt;x&gt;?</v>";
    expect(redactor.line(xml)).toBe(`<v>${REDACTED}</v>`);
  });

  it("masks the value inside surrounding double quotes when the secret was given quoted", () => {
    const redactor = createRedactor({ secrets: ['"quoted-value"'] });
    expect(redactor.line("got quoted-value here")).toBe(`got ${REDACTED} here`);
  });

  it("ignores and counts secrets shorter than MIN_SECRET_LENGTH", () => {
    expect(MIN_SECRET_LENGTH).toBe(6);
    const redactor = createRedactor({ secrets: ["abc", "12345", "abc", "", "   ", "long-enough"] });
    expect(redactor.ignoredShortSecrets).toBe(2);
    expect(redactor.line("abc 12345 long-enough")).toBe(`abc 12345 ${REDACTED}`);
    expect(createRedactor({ secrets: ["abcdef"] }).ignoredShortSecrets).toBe(0);
  });

  it("masks each line of a multi-line secret separately and counts short lines", () => {
    const secret = "first-line-value\n  second-line-value\r\nxy\n";
    const redactor = createRedactor({ secrets: [secret] });
    expect(redactor.ignoredShortSecrets).toBe(1);
    expect(redactor.line("got second-line-value")).toBe(`got ${REDACTED}`);
    expect(redactor.text(`a\n${secret}b`)).toBe(`a\n${REDACTED}\n  ${REDACTED}\r\nxy\nb`);
    expect(redactor.line(JSON.stringify({ v: secret }))).toBe(`{"v":"${REDACTED}"}`);
  });

  it("prefers the longest of overlapping known values", () => {
    const redactor = createRedactor({ secrets: ["abcdef", "abcdefghij"] });
    expect(redactor.line("xabcdefghijy abcdefz")).toBe(`x${REDACTED}y ${REDACTED}z`);
  });

  it("escapes regex metacharacters in values", () => {
    const redactor = createRedactor({ secrets: ["a.b*c+d?(e)[f]{g}|h^$\\"] });
    expect(redactor.line("aXb*c+d?(e)[f]{g}|h^$\\")).toBe("aXb*c+d?(e)[f]{g}|h^$\\");
    expect(redactor.line("-a.b*c+d?(e)[f]{g}|h^$\\-")).toBe(`-${REDACTED}-`);
  });

  it("handles many secrets sharing a prefix", () => {
    const secrets = Array.from({ length: 200 }, (_, i) => `sk-ant-api03-shared-${i}-tail`);
    const redactor = createRedactor({ secrets });
    expect(redactor.line(`x ${secrets[150]} y ${secrets[7]}`)).toBe(`x ${REDACTED} y ${REDACTED}`);
    // So many values are looked for with one alternation rather than one search each: same result.
    const block = Buffer.from(`clean\nx ${secrets[150]}\nclean\n${Buffer.from(`..${secrets[99]}`).toString("base64")}`);
    const out = redactor.bytes(block).toString("utf8").split("\n");
    expect(out.slice(0, 3)).toEqual(["clean", `x ${REDACTED}`, "clean"]);
    expect(out[3]).toContain(REDACTED);
  });
});
