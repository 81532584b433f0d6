// Agent text never steers a terminal and never passes for the service's own lines (ADR 0045): controls are shown,
// not passed on; a stored service line starts with RS and no stored agent line can; a displayed agent line is
// behind the gutter. fast-check draws strings heavy in the characters that matter.
import fc from "fast-check";
import { describe, expect, it } from "vitest";
import { agentLine, AGENT_GUTTER, displayLine, isServiceLine, serviceLine, storedLine } from "../../../src/session-log/service-lines.js";
import { escapeControlsInJson, holdsControls, showControls } from "../../../src/session-log/visible-controls.js";

/** Every character a terminal (or a bidi-aware renderer) acts on, besides printable text. */
const CONTROL = /[\x00-\x08\x0a-\x1f\x7f-\x9f\u061c\u200e\u200f\u2028-\u202e\u2066-\u2069]/;
const hostileChar = fc.constantFrom(
  "\x1b",
  "\r",
  "\n",
  "\x07",
  "\x00",
  "\x1e",
  "\x7f",
  "\x9b",
  "\x85",
  "\u202e",
  "\u2066",
  "\u2028",
  "\u061c",
  "\t",
  "─",
  "│",
  "^",
  "[",
  "]",
  "a",
  "é",
  "—",
  "\u{1f600}",
  "\u200d",
);
const hostileText = fc.oneof(fc.string(), fc.array(hostileChar, { maxLength: 40 }).map((cs) => cs.join("")), fc.string({ unit: "binary" }));

describe("showControls", () => {
  it("shows each control as cat -v does, or as <U+XXXX> past ASCII; TAB and text stay", () => {
    expect(showControls("\x1b]52;c;ZXZpbA==\x07")).toBe("^[]52;c;ZXZpbA==^G");
    expect(showControls("\x1b]8;;https://evil.example\x1b\\click\x1b]8;;\x1b\\")).toBe("^[]8;;https://evil.example^[\\click^[]8;;^[\\");
    expect(showControls("innocent\rmalicious\x7f\x00")).toBe("innocent^Mmalicious^?^@");
    expect(showControls("\x9b2J \u202egnp.exe \u2066x\u2069")).toBe("<U+009B>2J <U+202E>gnp.exe <U+2066>x<U+2069>");
    expect(showControls("tab\tand — é ─ 😀")).toBe("tab\tand — é ─ 😀");
  });

  it("leaves no control behind, whatever the text, and showing twice changes nothing", () => {
    fc.assert(
      fc.property(hostileText, (text) => {
        const shown = showControls(text);
        expect(shown).not.toMatch(CONTROL);
        expect(showControls(shown)).toBe(shown);
      }),
      { numRuns: 2000 },
    );
  });
});

describe("holdsControls (the worker's fast path)", () => {
  it("finds a control in a block of UTF-8 lines exactly when showControls would change a line of it", () => {
    fc.assert(
      fc.property(fc.array(hostileText, { maxLength: 5 }), (lines) => {
        const split = lines.flatMap((l) => l.split("\n"));
        const block = Buffer.from(split.join("\n"), "utf8");
        // Decoding may turn invalid UTF-8 (lone surrogates) into U+FFFD: compare with what the worker decodes.
        const decoded = block.toString("utf8").split("\n");
        expect(holdsControls(block)).toBe(decoded.some((l) => showControls(l) !== l));
      }),
      { numRuns: 2000 },
    );
  });
});

describe("holdsControls, word by word", () => {
  it("finds one control (one, two or three bytes) at any position and alignment, and none in clean text of any alignment", () => {
    const clean = "plain text — é ─ tab\there\nnext line ✓ 😀 ";
    for (const control of ["\x1b", "\r", "\x01", "\x7f", "\x9b", "\u061c", "\u200f", "\u202e", "\u2069"]) {
      for (let at = 0; at <= clean.length; at++) {
        const text = `${clean.slice(0, at)}${control}${clean.slice(at)}`;
        for (let offset = 0; offset < 4; offset++) {
          const bytes = Buffer.concat([Buffer.alloc(offset), Buffer.from(text, "utf8")]).subarray(offset);
          expect(holdsControls(bytes), `${JSON.stringify(control)} at ${at}, offset ${offset}`).toBe(true);
          expect(holdsControls(Buffer.concat([Buffer.alloc(offset), Buffer.from(clean, "utf8")]).subarray(offset))).toBe(false);
        }
      }
    }
  });
});

describe("escapeControlsInJson", () => {
  it("leaves no raw control in JSON text and parses to the same value", () => {
    fc.assert(
      fc.property(fc.array(hostileText, { maxLength: 4 }), (lines) => {
        const json = escapeControlsInJson(JSON.stringify({ log_tail: lines, message: lines.join(" ") }));
        expect(json).not.toMatch(CONTROL);
        expect(JSON.parse(json)).toEqual({ log_tail: lines, message: lines.join(" ") });
      }),
      { numRuns: 1000 },
    );
  });
});

describe("service lines", () => {
  it("stored: the service's start with RS, an agent's never do and hold no control; storedLine changes neither", () => {
    fc.assert(
      fc.property(hostileText, hostileText, (agentText, ourText) => {
        const agent = agentLine(agentText);
        const ours = serviceLine(ourText);
        expect(isServiceLine(agent)).toBe(false);
        expect(agent).not.toMatch(CONTROL);
        expect(isServiceLine(ours)).toBe(true);
        expect(ours.slice(1)).not.toMatch(CONTROL);
        expect([storedLine(agent), storedLine(ours)]).toEqual([agent, ours]);
      }),
      { numRuns: 2000 },
    );
  });

  it("displayed: the service's as they read, every agent line behind the gutter; an imitation stays an agent's", () => {
    expect(displayLine(serviceLine("── run ok: 1 commit(s)"))).toBe("── run ok: 1 commit(s)");
    expect(displayLine(agentLine("── run ok: 9 commit(s)"))).toBe("│ ── run ok: 9 commit(s)");
    expect(displayLine(agentLine("x\r── run killed (cancelled): stopped"))).toBe("│ x^M── run killed (cancelled): stopped");
    // A line stored raw by an older version is shown too, as an agent's.
    expect(displayLine("\x1b[2J\x1b[H── run ok")).toBe("│ ^[[2J^[[H── run ok");
    fc.assert(
      fc.property(hostileText, (text) => {
        const shown = displayLine(agentLine(text));
        expect(shown.startsWith(AGENT_GUTTER)).toBe(true);
        expect(shown).not.toMatch(CONTROL);
      }),
      { numRuns: 2000 },
    );
  });
});
