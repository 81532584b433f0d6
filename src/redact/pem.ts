// PEM private key blocks. A stream sees them one line at a time, so block state is carried by the caller.

/** Lines after a BEGIN with no END before suppression stops, so a stray BEGIN cannot swallow a whole log. */
export const PEM_MAX_LINES = 200;
export const PEM_REPLACEMENT = "[REDACTED:private-key]";

const BEGIN = /-----BEGIN[A-Z ]{0,40}PRIVATE KEY(?: BLOCK)?-----/g;
const END = /-----END[A-Z ]{0,40}PRIVATE KEY(?: BLOCK)?-----/g;

/** A whole block, BEGIN to END, for a text read at once rather than line by line. */
export const PEM_BLOCK = new RegExp(`${BEGIN.source}[\\s\\S]*?${END.source}`, "g");

export interface PemSegment {
  readonly text: string;
  readonly secret: boolean;
}

export interface PemSplit {
  readonly segments: readonly PemSegment[];
  /** True when the line ends inside a block (BEGIN seen, END not yet). */
  readonly inBlock: boolean;
}

/** Every BEGIN or END marker holds this. */
export const PEM_HINT = "PRIVATE KEY";

export function mayTouchPem(line: string): boolean {
  return line.includes(PEM_HINT);
}

/** Split a line into key material (BEGIN…END inclusive) and the rest, starting inside a block if `inBlock`. */
export function splitPem(line: string, inBlock: boolean): PemSplit {
  const segments: PemSegment[] = [];
  let pos = 0;
  let open = inBlock;
  for (;;) {
    const marker = open ? END : BEGIN;
    marker.lastIndex = pos;
    const found = marker.exec(line);
    if (open) {
      const end = found === null ? line.length : found.index + found[0].length;
      segments.push({ text: line.slice(pos, end), secret: true });
      if (found === null) return { segments, inBlock: true };
      pos = end;
      open = false;
    } else {
      const start = found === null ? line.length : found.index;
      if (start > pos) segments.push({ text: line.slice(pos, start), secret: false });
      if (found === null) return { segments, inBlock: false };
      pos = start;
      open = true;
    }
  }
}
