// Replaces the values of the run's secrets (config.env) in anything the child prints itself.
// The worker redacts again; this keeps the child clean on its own.

/** Values shorter than this are not secrets worth hunting ("1", "yes") and would mangle output. */
const MIN_SECRET_LENGTH = 4;
const MARK = "[REDACTED]";

export class SecretScrubber {
  private readonly needles: string[];
  private readonly byteNeedles: Buffer[];

  constructor(values: Iterable<string>) {
    const set = new Set<string>();
    for (const value of values) {
      if (value.length < MIN_SECRET_LENGTH) continue;
      set.add(value);
      const b64 = Buffer.from(value, "utf8").toString("base64");
      if (b64.length >= MIN_SECRET_LENGTH) set.add(b64);
    }
    // Longest first, so a secret containing another is replaced whole.
    this.needles = [...set].sort((a, b) => b.length - a.length);
    this.byteNeedles = this.needles.map((n) => Buffer.from(n, "utf8"));
  }

  /** Scrubber from whatever `env`-like object a (possibly invalid) config holds. */
  static fromUnknownEnv(env: unknown): SecretScrubber {
    if (typeof env !== "object" || env === null) return new SecretScrubber([]);
    const values = Object.values(env as Record<string, unknown>).filter((v): v is string => typeof v === "string");
    return new SecretScrubber(values);
  }

  /** The same on UTF-8 bytes; `bytes` itself when it holds no secret (one search per needle, nothing decoded). */
  scrubBytes(bytes: Buffer): Buffer {
    if (!this.byteNeedles.some((needle) => bytes.includes(needle))) return bytes;
    return Buffer.from(this.scrub(bytes.toString("utf8")), "utf8");
  }

  scrub(text: string): string {
    let out = text;
    for (const needle of this.needles) {
      if (out.includes(needle)) out = out.split(needle).join(MARK);
    }
    return out;
  }
}
