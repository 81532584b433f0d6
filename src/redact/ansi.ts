// ANSI escape sequences (CSI, OSC, two-byte) can split or hide a secret from the other rules.

const ANSI = /\x1b(?:\[[0-?]*[ -/]*[@-~]|\][^\x07\x1b]*(?:\x07|\x1b\\)?|[@-Z\\-_])/g;

/** Every sequence starts with ESC. */
export const ANSI_ESCAPE = "\x1b";

export function hasAnsi(text: string): boolean {
  return text.includes(ANSI_ESCAPE);
}

export function stripAnsi(text: string): string {
  return text.replace(ANSI, "");
}
