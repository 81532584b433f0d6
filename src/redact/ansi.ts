// ANSI escape sequences (CSI, OSC, two-byte) can split or hide a secret from the other rules.

const ANSI = /\x1b(?:\[[0-?]*[ -/]*[@-~]|\][^\x07\x1b]*(?:\x07|\x1b\\)?|[@-Z\\-_])/g;

export function hasAnsi(text: string): boolean {
  return text.includes("\x1b");
}

export function stripAnsi(text: string): string {
  return text.replace(ANSI, "");
}
