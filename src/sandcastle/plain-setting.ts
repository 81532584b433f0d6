// What may travel in a job's extra_env: plain settings only. Job data is stored in Redis and shown in
// Bull Board, so a name that says "secret" anywhere, or a value that carries a credential, is refused
// with the way to pass it instead: the env manifest.
import { keyShapeIn } from "../redact/index.js";

/** Words that name a secret wherever they stand in a name (GITHUB_TOKEN, MYSECRETS, DB_PASSWORD_FILE). */
const SECRET_PARTS = ["TOKEN", "SECRET", "PASSWORD", "PASSWD", "CREDENTIAL", "APIKEY", "PRIVATEKEY", "ACCESSKEY"];
/** Words too short to look for inside others (PATH holds PAT): secret only as a word of their own (GH_PAT, API_KEY_1). */
const SECRET_WORDS = new Set(["KEY", "KEYS", "PAT", "PRIVATE", "AUTH", "PASS", "PWD", "CREDS", "COOKIE"]);

const MANIFEST_HINT = "put it in the run's env manifest (ENV_MANIFEST_DIR/<env_manifest_name>.json, its value in the worker's environment), never in job data";

/** The secret-like word a variable name holds, or null. Words split at "_" and at lower→upper case changes. */
export function secretWordIn(name: string): string | null {
  const upper = name.toUpperCase();
  const part = SECRET_PARTS.find((p) => upper.includes(p));
  if (part !== undefined) return part;
  const words = name.replace(/([a-z0-9])([A-Z])/g, "$1_$2").toUpperCase().split(/_+/);
  return words.find((w) => SECRET_WORDS.has(w)) ?? null;
}

/** Why a value carries a credential (a URL with a password, a token's shape: the redactor's key shapes), or null. */
export function credentialIn(value: string): string | null {
  const kind = keyShapeIn(value);
  if (kind === null) return null;
  return kind === "url-password" ? "holds a URL with a password" : `holds what looks like a credential (${kind})`;
}

export function secretNameProblem(name: string): string | null {
  const word = secretWordIn(name);
  return word === null ? null : `the name holds "${word}", so it looks like a secret: ${MANIFEST_HINT}`;
}

export function credentialValueProblem(value: string): string | null {
  const why = credentialIn(value);
  return why === null ? null : `the value ${why}: ${MANIFEST_HINT}`;
}
