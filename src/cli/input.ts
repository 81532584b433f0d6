// CLI inputs: a JSON document from a file or stdin ("-"), with errors that name the source.
import { readFile } from "node:fs/promises";
import { AppError } from "../errors.js";

export async function readTextSource(source: string): Promise<string> {
  if (source === "-") {
    const chunks: Buffer[] = [];
    for await (const chunk of process.stdin) chunks.push(chunk as Buffer);
    return Buffer.concat(chunks).toString("utf8");
  }
  try {
    return await readFile(source, "utf8");
  } catch (err) {
    throw new AppError("invalid_input", `cannot read ${source}: ${(err as NodeJS.ErrnoException).code ?? (err as Error).message}`);
  }
}

export async function readJsonSource(source: string, what: string): Promise<unknown> {
  const text = await readTextSource(source);
  try {
    return JSON.parse(text);
  } catch (err) {
    throw new AppError("invalid_input", `${what} from ${source === "-" ? "stdin" : source} is not valid JSON: ${(err as Error).message}`);
  }
}
