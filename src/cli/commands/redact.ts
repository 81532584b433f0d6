// `redact`: stdin → stdout through the log redactor, line by line (PEM blocks across lines included).
import { createInterface } from "node:readline";
import { createLineRedactor, createRedactor } from "../../redact/index.js";

export async function redactCommand(): Promise<number> {
  const redact = createLineRedactor(createRedactor());
  const rl = createInterface({ input: process.stdin, crlfDelay: Infinity });
  for await (const line of rl) {
    if (!process.stdout.write(`${redact(line)}\n`)) await new Promise((r) => process.stdout.once("drain", r));
  }
  return 0;
}
