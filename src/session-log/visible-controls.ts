// Control characters in text an agent wrote, shown instead of obeyed. What reaches a terminal from a run's log
// must not steer it: ESC sequences (OSC 52 writes the clipboard, OSC 8 links, titles, cursor moves, erases), a
// bare CR that overwrites a line, the other C0 and C1 controls, bidi overrides that reorder what is shown. Each
// becomes visible text as `cat -v` shows it (`^[`, `^M`, `^?`), or `<U+202E>` past ASCII (ADR 0045).

/** What is shown, not passed on: C0 but TAB, DEL, C1, bidi marks, embeddings, overrides and isolates, line and paragraph separators. */
const CONTROLS = /[\x00-\x08\x0a-\x1f\x7f-\x9f\u061c\u200e\u200f\u2028-\u202e\u2066-\u2069]/g;
/** The same set past ASCII: what JSON.stringify leaves raw (it escapes C0 itself). */
const LEFT_RAW_BY_JSON = /[\x7f-\x9f\u061c\u200e\u200f\u2028-\u202e\u2066-\u2069]/g;

function shown(c: string): string {
  const code = c.charCodeAt(0);
  if (code < 0x20) return `^${String.fromCharCode(code + 0x40)}`;
  if (code === 0x7f) return "^?";
  return `<U+${code.toString(16).toUpperCase().padStart(4, "0")}>`;
}

/** `text` with every control shown as visible text; the same string when it holds none (and when shown already). */
export function showControls(text: string): string {
  CONTROLS.lastIndex = 0;
  return CONTROLS.test(text) ? text.replace(CONTROLS, shown) : text;
}

/** What each UTF-8 byte may start: 1 a control, 2 the lead byte of a control past ASCII (checked with what follows). */
const LEAD = new Uint8Array(256);
for (let b = 0; b < 0x20; b++) LEAD[b] = 1;
LEAD[0x09] = 0; // TAB
LEAD[0x0a] = 0; // the line separator of a block
LEAD[0x7f] = 1;
LEAD[0xc2] = 2; // U+0080–U+009F: C2 80–9F
LEAD[0xd8] = 2; // U+061C: D8 9C
LEAD[0xe2] = 2; // U+200E/F: E2 80 8E/8F; U+2028–U+202E: E2 80 A8–AE; U+2066–U+2069: E2 81 A6–A9

/** Whether a control starts at byte `i`. */
function controlAt(bytes: Buffer, i: number): boolean {
  const lead = LEAD[bytes[i]!]!;
  if (lead !== 2) return lead === 1;
  const b1 = bytes[i + 1];
  if (b1 === undefined) return false;
  switch (bytes[i]) {
    case 0xc2:
      return b1 >= 0x80 && b1 <= 0x9f;
    case 0xd8:
      return b1 === 0x9c;
    default: {
      const b2 = bytes[i + 2];
      if (b2 === undefined) return false;
      return b1 === 0x80 ? b2 === 0x8e || b2 === 0x8f || (b2 >= 0xa8 && b2 <= 0xae) : b1 === 0x81 && b2 >= 0xa6 && b2 <= 0xa9;
    }
  }
}

/**
 * Whether "\n"-separated UTF-8 lines hold a control showControls would show (the worker's fast path skips blocks
 * without). Four bytes at a time: it runs over every block an agent prints.
 */
export function holdsControls(lines: Buffer): boolean {
  const head = Math.min(lines.length, (4 - (lines.byteOffset & 3)) & 3);
  const words = new Uint32Array(lines.buffer, lines.byteOffset + head, (lines.length - head) >>> 2);
  for (let i = 0; i < head; i++) if (controlAt(lines, i)) return true;
  for (let j = 0; j < words.length; j++) {
    const x = words[j]!;
    // Set when some byte is below 0x20 or from 0x7F up (never missed; now and then set without): only then are its bytes read.
    if ((((x - 0x20202020) & ~x) | ((x + 0x01010101) | x)) & 0x80808080) {
      const at = head + j * 4;
      for (let i = at; i < at + 4; i++) if (controlAt(lines, i)) return true;
    }
  }
  for (let i = head + words.length * 4; i < lines.length; i++) if (controlAt(lines, i)) return true;
  return false;
}

/** JSON text for a terminal: the controls JSON.stringify leaves raw (C1, bidi, separators) as \u escapes; it parses the same. */
export function escapeControlsInJson(json: string): string {
  return json.replace(LEFT_RAW_BY_JSON, (c) => `\\u${c.charCodeAt(0).toString(16).padStart(4, "0")}`);
}
