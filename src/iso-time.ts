// ISO-8601 timestamps for rows and records. Formatting a Date costs more than the rest of a small row, and
// the rows of one burst share their second: its formatted part is kept and only the milliseconds are written.
let lastSecond = Number.NaN;
let lastPrefix = "";
/** 9999-12-31T23:59:59.999Z: past it toISOString writes a six-digit year. */
const LAST_FOUR_DIGIT_YEAR_MS = 253_402_300_799_999;

/** `new Date(ms).toISOString()`. */
export function isoTime(ms: number = Date.now()): string {
  // A fraction of a millisecond, or a time before 1970 or after 9999: the plain way.
  if (!Number.isInteger(ms) || ms < 0 || ms > LAST_FOUR_DIGIT_YEAR_MS) return new Date(ms).toISOString();
  const second = Math.floor(ms / 1000);
  if (second !== lastSecond) {
    // "YYYY-MM-DDTHH:MM:SS."
    lastPrefix = new Date(second * 1000).toISOString().slice(0, 20);
    lastSecond = second;
  }
  const milli = ms - second * 1000;
  return `${lastPrefix}${milli < 10 ? "00" : milli < 100 ? "0" : ""}${milli}Z`;
}
