import fc from "fast-check";
import { describe, expect, it } from "vitest";
import { containsSecretName, createRedactor, NAME_RULE } from "../../../src/redact/index.js";
import { redactSecretNames, redactSecretNamesWholeLine } from "../../../src/redact/name-rule.js";

/** The session-log check: `grep -E '[A-Z_]+_(KEY|TOKEN|SECRET|PASSWORD)\s*[=:]'` finds nothing in a session log. */
const SEED_GREP = /[A-Z_]+_(KEY|TOKEN|SECRET|PASSWORD)\s*[=:]/;
const redactor = createRedactor();

describe("name rule", () => {
  it("replaces the whole match of the session-log grep with ***=[REDACTED]", () => {
    const out = redactor.line("ANTHROPIC_API_KEY=sk-ant-fake-key-for-test");
    expect(out).toBe("***=[REDACTED]");
    expect(SEED_GREP.test(out)).toBe(false);
    expect(out).not.toContain("sk-ant");
  });

  it.each([
    ["export API_KEY=abc123 && run", "export ***=[REDACTED] && run"],
    ["DB_PASSWORD : hunter2 next", "***=[REDACTED] next"],
    ['export API_KEY="abc def" rest', "export ***=[REDACTED] rest"],
    ["SLACK_BOT_TOKEN='a b c' rest", "***=[REDACTED] rest"],
    ["AWS_S3_SECRET: hello there", "***=[REDACTED] there"],
    ["MY_KEY=", "***=[REDACTED]"],
  ])("env/YAML form %j", (input, expected) => {
    expect(redactor.line(input)).toBe(expected);
  });

  it.each([
    ['{"GITHUB_TOKEN": "x", "b": 1}', '{"***": "[REDACTED]", "b": 1}'],
    ['{"SOME_TOKEN":"value","n":2}', '{"***":"[REDACTED]","n":2}'],
    ['{"SOME_TOKEN":"va\\"lue","n":2}', '{"***":"[REDACTED]","n":2}'],
    ['{"SOME_TOKEN":12345,"n":2}', '{"***":"[REDACTED]","n":2}'],
    ['["API_KEY=abc,d", "x"]', '["***=[REDACTED]", "x"]'],
  ])("JSON form stays valid JSON: %j", (input, expected) => {
    const out = redactor.line(input);
    expect(out).toBe(expected);
    expect(() => JSON.parse(out)).not.toThrow();
  });

  it("handles names and values inside a JSON string (escaped quotes)", () => {
    const line = JSON.stringify({ cmd: 'export API_KEY="abc def" && run', nested: '{"DB_PASSWORD": "pw pw"}' });
    const out = redactor.line(line);
    expect(JSON.parse(out)).toEqual({ cmd: "export ***=[REDACTED] && run", nested: '{"***": "[REDACTED]"}' });
  });

  it("leaves ordinary text, lower-case names and names without = or : alone", () => {
    for (const line of ["the API_KEY is rotated daily", "api_key=abc", "KEYBOARD=us", "MY_KEYS=1", "x_KEY=1"]) {
      expect(redactor.line(line)).toBe(line);
    }
  });

  it("NAME_RULE and containsSecretName agree with the session-log grep", () => {
    for (const line of ["A_KEY=1", "xA_TOKEN : 2", "nothing", "a_key=1", "_KEY=1", "A_SECRET\t=", "A_PASSWORD"]) {
      expect(containsSecretName(line)).toBe(SEED_GREP.test(line));
      expect(NAME_RULE.test(line)).toBe(SEED_GREP.test(line));
    }
  });

  it("never leaves a name the session-log grep finds (random lines)", () => {
    const line = fc
      .array(fc.constantFrom("A", "B", "_", "KEY", "TOKEN", "SECRET", "PASSWORD", "=", ":", " ", '"', "'", "\\", ",", "}", "x", "1", "\t"), {
        minLength: 1,
        maxLength: 24,
        size: "max",
      })
      .map((parts) => parts.join(""));
    fc.assert(
      fc.property(line, (l) => {
        expect(SEED_GREP.test(redactor.line(l))).toBe(false);
      }),
      { numRuns: 20_000 },
    );
  });

  it("gives exactly what the whole-line regex gives (random lines)", () => {
    const line = fc
      .array(fc.constantFrom("A", "B", "_", "_KEY", "_TOKEN", "SECRET", "_PASSWORD", "=", ":", " ", '"', "'", "\\", '\\"', ",", "}", "x", "1", "\t"), {
        minLength: 1,
        maxLength: 20,
        size: "max",
      })
      .map((parts) => parts.join(""));
    let redacted = 0;
    fc.assert(
      fc.property(line, (l) => {
        const whole = redactSecretNamesWholeLine(l);
        if (whole !== l) redacted += 1;
        expect(redactSecretNames(l)).toBe(whole);
      }),
      { numRuns: 50_000 },
    );
    // Enough lines held a name that the comparison could have failed on them.
    expect(redacted).toBeGreaterThan(2000);
  });
});
