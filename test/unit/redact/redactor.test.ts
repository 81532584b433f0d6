import { describe, expect, it } from "vitest";
import {
  containsKeyShape,
  containsSecretName,
  createLineRedactor,
  createRedactor,
  REDACTED,
} from "../../../src/redact/index.js";

const SECRET = "tok-9f8e7d6c5b4a";

describe("createRedactor", () => {
  it("stdout secret-strip: a synthetic stdout line keeps no name and no key shape", () => {
    const stream = createLineRedactor(createRedactor());
    const stdout = [
      '{"type":"log","text":"starting"}',
      "ANTHROPIC_API_KEY=sk-ant-fake-key-for-test",
      "env: ANTHROPIC_API_KEY = sk-ant-fake-key-for-test other",
      '{"type":"env","ANTHROPIC_API_KEY":"sk-ant-fake-key-for-test"}',
      "echo sk-ant-fake-key-for-test",
    ];
    const logs = stdout.map(stream);
    expect(logs[1]).toBe("***=[REDACTED]");
    for (const line of logs) {
      expect(containsSecretName(line)).toBe(false);
      expect(containsKeyShape(line)).toBe(false);
      expect(line).not.toContain("sk-ant");
    }
    expect(JSON.parse(logs[3] ?? "")).toEqual({ type: "env", "***": REDACTED });
  });

  it("combines known values, key shapes and names in one line", () => {
    const redactor = createRedactor({ secrets: [SECRET] });
    const line = `x=${SECRET} y=ghp_${"aB3".repeat(12)} GH_TOKEN=${SECRET}`;
    expect(redactor.line(line)).toBe(`x=${REDACTED} y=[REDACTED:github] ***=[REDACTED]`);
  });

  it("line() is pure: the same input gives the same output after a PEM BEGIN", () => {
    const redactor = createRedactor();
    redactor.line("-----BEGIN PRIVATE KEY-----");
    expect(redactor.line("hello")).toBe("hello");
  });

  it("leaves clean lines untouched, including their ANSI colours", () => {
    const redactor = createRedactor({ secrets: [SECRET] });
    const line = "\x1b[32m✓ 12 tests passed\x1b[0m";
    expect(redactor.line(line)).toBe(line);
  });

  it("masks a secret wrapped or split by ANSI colour codes", () => {
    const redactor = createRedactor({ secrets: [SECRET] });
    expect(redactor.line(`\x1b[31m${SECRET}\x1b[0m`)).toBe(REDACTED);
    expect(redactor.line(`got \x1b[1m${SECRET.slice(0, 5)}\x1b[22m${SECRET.slice(5)}!`)).toBe(`got ${REDACTED}!`);
    expect(redactor.line("\x1b[1mAPI_KEY\x1b[0m=\x1b[33mvalue\x1b[0m")).toBe("***=[REDACTED]");
    const colouredKey = `\x1b[36mghp_${"aB3".repeat(12)}\x1b[0m`;
    expect(containsKeyShape(redactor.line(colouredKey))).toBe(false);
  });

  it("text() keeps line separators and redacts every line", () => {
    const redactor = createRedactor({ secrets: [SECRET] });
    expect(redactor.text(`a ${SECRET}\r\nB_TOKEN=x\n\nc`)).toBe(`a ${REDACTED}\r\n***=[REDACTED]\n\nc`);
  });

  it("with no options still applies shapes and names", () => {
    const redactor = createRedactor();
    expect(redactor.ignoredShortSecrets).toBe(0);
    expect(redactor.line("A_SECRET=1 xoxb-1234567890-abcdef")).toBe("***=[REDACTED] [REDACTED:slack]");
  });

  it("accepts any iterable of secrets", () => {
    const redactor = createRedactor({ secrets: new Set([SECRET]).values() });
    expect(redactor.line(SECRET)).toBe(REDACTED);
  });

  // 256 KiB per shape: linear rules take milliseconds, a quadratic one takes far longer than 2 s.
  const UNITS = [
    "A_",
    "A_KEY_",
    "A_KEY_ ",
    'A_KEY=" ',
    "A_KEY A_KEY=",
    '"A_KEY":"\\"',
    "sk-",
    "sk-a",
    "eyJ-",
    "eyJaaaa.",
    "1",
    "12345:",
    "Bearer ",
    "-----BEGIN ",
    "-----BEGIN PRIVATE KEY-----",
    "\x1b[1",
    "\x1b]",
    "a",
    "ghp_",
    " ",
    "A_KEY\t",
  ];
  const fill = (unit: string, size: number): string => unit.repeat(Math.ceil(size / unit.length)).slice(0, size);
  const pathological = createRedactor({ secrets: ["aaaaaab", "sk-ant-api03-zzzzzzzz"] });
  pathological.text('A_KEY="x" sk-ant-api03-zzzzzzzz\n\x1b[1m');

  it.each(UNITS)("a 256 KiB line of %j finishes quickly (no catastrophic backtracking)", (unit) => {
    const line = fill(unit, 1 << 18);
    const started = performance.now();
    const out = pathological.line(line);
    createLineRedactor(pathological)(line);
    containsSecretName(line);
    containsKeyShape(line);
    expect(performance.now() - started).toBeLessThan(2000);
    expect(containsSecretName(out)).toBe(false);
  });

  it("a 1 MiB line mixing every pathological shape finishes", () => {
    const line = UNITS.map((unit) => fill(unit, Math.ceil((1 << 20) / UNITS.length))).join("");
    expect(line.length).toBeGreaterThanOrEqual(1 << 20);
    const started = performance.now();
    const out = pathological.line(line);
    expect(performance.now() - started).toBeLessThan(2000);
    expect(containsSecretName(out)).toBe(false);
  });
});

describe("mayRedact: whether redaction could change a text, in one pass", () => {
  const redactor = createRedactor({ secrets: [SECRET] });
  const texts = [
    "informational", "margot_intent_classified", "CleanExpo/RestoreAssist", "d-0123456789ab", "",
    "ANTHROPIC_API_KEY=sk-ant-fake-key-for-test", "echo sk-ant-fake-key-for-test", `value ${SECRET} here`, "tok-9f8e7d6c5b4",
    "Authorization: Bearer abc123def456ghi", "ghp_0123456789abcdefghijklmnopqrstuvwxyzAB", "postgres://u:p4ss@h/db",
    "-----BEGIN RSA PRIVATE KEY-----", "\u001b[31mred\u001b[0m", "DB_PASSWORD=hunter2hunter2", "a plain sentence with token and key words",
  ];

  it("is false only where line() and text() leave the text as it is, and true for every text they change", () => {
    let changed = 0;
    for (const text of texts) {
      const same = redactor.line(text) === text && redactor.text(text) === text;
      if (!redactor.mayRedact(text)) expect(same, text).toBe(true);
      if (!same) {
        expect(redactor.mayRedact(text), text).toBe(true);
        changed++;
      }
    }
    expect(changed).toBeGreaterThan(6);
  });

  it("settles strings joined by newlines as it settles each of them", () => {
    for (const a of texts) {
      for (const b of texts) expect(redactor.mayRedact(`${a}\n${b}`), `${a} | ${b}`).toBe(redactor.mayRedact(a) || redactor.mayRedact(b));
    }
  });
});
