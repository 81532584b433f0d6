// What leaves the process (drafts, notices, Linear issues, follow-ups) is redacted twice over: secret
// shapes, then PII at standard strictness. Texts that scale with the research body are redacted slice
// by slice with a pause between slices, so a large body never holds the event loop for long.
import { createRedactor } from "../../redact/index.js";
import { piiRedactor, type PiiConfig } from "./pii.js";
import { textSlices, yieldToEventLoop } from "../reading/text-slices.js";

export class OutboundText {
  private readonly secrets = createRedactor();
  private readonly pii: ReturnType<typeof piiRedactor>;

  constructor(pii: PiiConfig) {
    this.pii = piiRedactor(pii);
  }

  text(text: string): string {
    return this.pii(this.secrets.text(text)).text;
  }

  /** `text` for a text of any size: slice by slice, pausing between slices. */
  async inSlices(text: string): Promise<string> {
    const run = this.textSteps(text);
    for (let next = run.next(); ; next = run.next()) {
      if (next.done) return next.value;
      await yieldToEventLoop();
    }
  }

  /** `text` as steps: each `yield` falls between two slices. */
  *textSteps(text: string): Generator<void, string> {
    const slices = textSlices(text);
    if (slices.length === 1) return this.text(text);
    const out: string[] = [];
    for (const [i, slice] of slices.entries()) {
      if (i > 0) yield;
      out.push(this.text(slice));
    }
    return out.join("");
  }
}
