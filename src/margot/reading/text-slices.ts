// Cutting a large text into pieces that can be redacted one at a time, with a pause between
// them, without changing what the redaction finds: cuts fall on blank lines, which no secret,
// URL, address, phone number or name spans. Only a stretch with no blank line for a whole
// slice is cut at a line end, and never inside a PEM block (the one multi-line secret shape).

/** Longest stretch of Margot work between two pauses (a pause lets other jobs and lock renewals run). */
export const SLICE_MS = 20;

/** What happens between two slices of work. */
export type Pause = () => Promise<void>;

/** One slice of CPU per step; other jobs (lock renewals among them) run in between. */
export const yieldToEventLoop: Pause = () => new Promise<void>((resolve) => setImmediate(resolve));

/** Steps (a generator whose `yield`s are where work may pause) run to the end without pausing. */
export function runSteps<T>(steps: Generator<void, T>): T {
  for (let next = steps.next(); ; next = steps.next()) if (next.done) return next.value;
}

/** Characters redacted per slice: sized so a slice takes about SLICE_MS. */
export const REDACTION_SLICE_CHARS = 64 * 1024;

export function textSlices(text: string, size: number = REDACTION_SLICE_CHARS): string[] {
  if (text.length <= size) return [text];
  const slices: string[] = [];
  let start = 0;
  while (text.length - start > size) {
    const window = text.slice(start, start + size);
    let cut = window.lastIndexOf("\n\n");
    if (cut > 0) cut += 2;
    else {
      const line = window.lastIndexOf("\n");
      const insidePem = window.lastIndexOf("-----BEGIN") > window.lastIndexOf("-----END");
      cut = line > 0 && !insidePem ? line + 1 : -1;
    }
    if (cut <= 0) {
      // No safe cut in this window: take up to the next blank line, however far.
      const next = text.indexOf("\n\n", start + size);
      cut = next < 0 ? text.length - start : next + 2 - start;
    }
    slices.push(text.slice(start, start + cut));
    start += cut;
  }
  if (start < text.length) slices.push(text.slice(start));
  return slices;
}
