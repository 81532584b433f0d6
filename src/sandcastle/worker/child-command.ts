// How to start the child: SANDCASTLE_BIN, or the project's own compiled child program.
import { fileURLToPath } from "node:url";

export interface ChildCommand {
  readonly command: string;
  readonly argsPrefix: readonly string[];
}

export const BUILT_IN_CHILD = fileURLToPath(new URL("../child/main.js", import.meta.url));

/** A `.js` bin runs under this same node (no PATH lookup, no TS loader); anything else is executed as is. */
export function childCommand(bin: string | undefined): ChildCommand {
  const path = bin ?? BUILT_IN_CHILD;
  return /\.(c|m)?js$/.test(path) ? { command: process.execPath, argsPrefix: [path] } : { command: path, argsPrefix: [] };
}

export function childArgs(cmd: ChildCommand, configPath: string): string[] {
  return [...cmd.argsPrefix, "run", "--config", configPath, "--json"];
}
