// ISO-8601 timestamps for rows and records. Formatting a Date costs more than the rest of a small row,
// and the rows of one burst share their millisecond: the last one formatted is kept.
let lastMs = Number.NaN;
let lastIso = "";

/** `new Date(ms).toISOString()`. */
export function isoTime(ms: number = Date.now()): string {
  if (ms !== lastMs) {
    lastIso = new Date(ms).toISOString();
    lastMs = ms;
  }
  return lastIso;
}
