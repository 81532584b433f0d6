// Reads and validates the 0600 config file the worker wrote (`--config <path>`).
// Messages name the offending field and never echo a value from the file.
import { readFile } from "node:fs/promises";
import { ChildConfig } from "../contract.js";
import { SecretScrubber } from "./secret-scrubber.js";

export type ConfigLoad =
  | { readonly ok: true; readonly config: ChildConfig; readonly scrubber: SecretScrubber }
  | { readonly ok: false; readonly message: string; readonly scrubber: SecretScrubber; readonly branch: string };

export async function loadChildConfig(path: string): Promise<ConfigLoad> {
  const none = new SecretScrubber([]);
  let text: string;
  try {
    text = await readFile(path, "utf8");
  } catch (error) {
    const code = (error as NodeJS.ErrnoException).code ?? "unknown error";
    return { ok: false, message: `config: cannot read ${path} (${code})`, scrubber: none, branch: "" };
  }
  let raw: unknown;
  try {
    raw = JSON.parse(text);
  } catch {
    // JSON.parse's own message quotes the text around the error: never print it.
    return { ok: false, message: `config: ${path} is not valid JSON`, scrubber: none, branch: "" };
  }
  const scrubber = SecretScrubber.fromUnknownEnv(isObject(raw) ? raw.env : undefined);
  const branch = rawBranch(raw);
  const parsed = ChildConfig.safeParse(raw);
  if (!parsed.success) {
    const issues = parsed.error.issues.slice(0, 5).map((issue) => {
      const field = issue.path.length > 0 ? issue.path.map(String).join(".") : "(config)";
      return `${field}: ${issue.message}`;
    });
    const more = parsed.error.issues.length > 5 ? ` (+${parsed.error.issues.length - 5} more)` : "";
    return { ok: false, message: scrubber.scrub(`invalid config: ${issues.join("; ")}${more}`), scrubber, branch };
  }
  return { ok: true, config: parsed.data, scrubber: new SecretScrubber(Object.values(parsed.data.env)) };
}

function isObject(value: unknown): value is Record<string, unknown> {
  return typeof value === "object" && value !== null && !Array.isArray(value);
}

/** The branch to echo in a failed run_complete, when the request names a plausible one. */
function rawBranch(raw: unknown): string {
  if (!isObject(raw) || !isObject(raw.request)) return "";
  const branch = raw.request.branch;
  return typeof branch === "string" && branch.length <= 200 && /^[A-Za-z0-9._\/-]+$/.test(branch) ? branch : "";
}
