// fast-check arbitraries of payloads that are wrong in exactly one field, each with the field a refusal must name.
import fc from "fast-check";

export interface BadPayload {
  /** What the refusal must name: the field's name (an unknown field: its own name). */
  readonly field: string;
  readonly payload: unknown;
}

const notString = fc.oneof(
  fc.integer(),
  fc.boolean(),
  fc.constant(null),
  fc.array(fc.string(), { maxLength: 2 }),
  fc.dictionary(fc.string(), fc.string(), { maxKeys: 2 }),
);
const notStringOrNull = notString.filter((v) => v !== null);
const notNumber = fc.oneof(fc.string(), fc.boolean(), fc.constant(null), fc.array(fc.integer(), { maxLength: 2 }));
const relative = fc.string({ minLength: 1, maxLength: 30 }).filter((p) => !p.startsWith("/"));
const badPlainName = fc.oneof(
  fc.constant(""),
  fc.constant("../etc"),
  fc.constant("a/b"),
  fc.constant("x..y"),
  fc.string({ minLength: 1, maxLength: 10 }).map((s) => `/${s}`),
  notString,
);
const badSessionId = fc.oneof(
  fc.constant(""),
  fc.constant("a".repeat(129)),
  fc.string({ minLength: 1, maxLength: 10 }).map((s) => `-${s}`),
  fc.constant("has space"),
  notString,
);
const badBoolean = fc.oneof(fc.string(), fc.integer(), fc.constant(null));
/** A key no schema here has; `__proto__` and friends included, they must be refused as unknown too. */
const unknownKey = (known: readonly string[]) =>
  fc.oneof(fc.constantFrom("__proto__", "constructor", "toString", "extra", "Session_id", "dryRun"), fc.stringMatching(/^[a-z][a-z0-9_]{0,15}$/)).filter((k) => !known.includes(k));

function oneField(base: Record<string, unknown>, field: string, value: fc.Arbitrary<unknown>): fc.Arbitrary<BadPayload> {
  return value.map((v) => ({ field, payload: { ...base, [field]: v } }));
}

function unknownField(base: Record<string, unknown>): fc.Arbitrary<BadPayload> {
  return fc.tuple(unknownKey(Object.keys(base)), fc.jsonValue()).map(([key, v]) => {
    const payload: Record<string, unknown> = { ...base };
    // defineProperty: a key like __proto__ must be an own field of the payload, as JSON.parse makes it.
    Object.defineProperty(payload, key, { value: v, enumerable: true, configurable: true, writable: true });
    return { field: key, payload };
  });
}

const notAnObject: fc.Arbitrary<BadPayload> = fc
  .oneof(fc.constant(null), fc.array(fc.integer(), { maxLength: 3 }), fc.string(), fc.integer())
  .map((payload) => ({ field: "(top level)", payload }));

/** A SandcastleRunRequest (valid as `base`) wrong in one field, or not an object at all. */
export function badRunRequest(base: Record<string, unknown>): fc.Arbitrary<BadPayload> {
  return fc.oneof(
    oneField(base, "session_id", badSessionId),
    oneField(
      base,
      "agent",
      fc.oneof(
        fc.string().filter((a) => !["claudeCode", "codex", "pi", "opencode", "script"].includes(a)),
        notString,
      ),
    ),
    oneField(base, "sandbox", fc.oneof(fc.constantFrom("lxc", "vm", "Docker", ""), notString)),
    // noSandbox outside a dry run is refused on the sandbox field.
    fc.constant({ field: "sandbox", payload: { ...base, sandbox: "noSandbox", dry_run: false } }),
    oneField(base, "model", fc.oneof(fc.constant(""), fc.constant("m".repeat(201)), notString)),
    oneField(base, "network", fc.oneof(fc.constantFrom("host", "bridge", ""), notString)),
    oneField(base, "prompt_template_dir", fc.oneof(relative, notString)),
    oneField(base, "repo_workdir", fc.oneof(relative, notString)),
    oneField(base, "branch", fc.oneof(fc.constant(""), fc.constant("b".repeat(201)), notString)),
    oneField(base, "env_manifest_name", badPlainName),
    oneField(
      base,
      "parallel_implementers",
      fc.oneof(
        fc.integer({ max: 0 }),
        fc.integer({ min: 9 }),
        fc.double({ min: 1.01, max: 7.99, noNaN: true }).filter((d) => !Number.isInteger(d)),
        notNumber,
      ),
    ),
    oneField(base, "timeout_minutes", fc.oneof(fc.double({ max: 0, noNaN: true }), fc.double({ min: 240.001, max: 1e9, noNaN: true }), notNumber)),
    oneField(
      base,
      "extra_env",
      fc.oneof(
        fc.constantFrom({ API_KEY: "x" }, { GITHUB_TOKEN: "x" }, { "1BAD": "x" }, { "BAD-NAME": "x" }, { OK: "v".repeat(4097) }),
        fc.integer().map((n) => ({ OK: n })),
        notString.filter((v) => v === null || typeof v !== "object" || Array.isArray(v)),
      ),
    ),
    oneField(base, "dry_run", badBoolean),
    oneField(base, "on_capacity", fc.oneof(fc.constantFrom("drop", "queue", ""), notString)),
    unknownField(base),
    notAnObject,
  );
}

/** A MargotResearchCompletion (valid as `base`) wrong in one field. */
export function badCompletion(base: Record<string, unknown>): fc.Arbitrary<BadPayload> {
  return fc.oneof(
    oneField(base, "interaction_id", fc.oneof(fc.constant(""), notString)),
    oneField(base, "body", fc.oneof(fc.constant(""), notString)),
    oneField(base, "originated_at", fc.oneof(fc.constantFrom("yesterday", "2026-13-45T99:00:00Z", ""), notString)),
    oneField(base, "originating_session_id", fc.oneof(fc.constant(""), notString)),
    unknownField(base),
  );
}

/** A draft id as margot-intent jobs carry it, wrong: empty, too long, all digits, or a character a job id or key must not hold. */
const badDraftId = fc.oneof(
  fc.constantFrom("", "x".repeat(65), "a/b", "d:1", "has space", "d-\u00e9"),
  fc.nat().map(String),
  fc.string({ minLength: 1, maxLength: 20 }).filter((id) => !/^[A-Za-z0-9_-]{1,64}$/.test(id)),
  notString,
);
const notWholeNonNegative = fc.oneof(fc.integer({ max: -1 }), fc.double({ min: 0.01, max: 1e6, noNaN: true }).filter((d) => !Number.isInteger(d)), notNumber);

/** A draft-reaction job (valid as `base`, with every optional field set) wrong in one field. */
export function badDraftReaction(base: Record<string, unknown>): fc.Arbitrary<BadPayload> {
  return fc.oneof(
    oneField(base, "draft_id", badDraftId),
    oneField(base, "reaction", fc.oneof(fc.string().filter((r) => !["approve", "reject", "defer"].includes(r)), notString)),
    oneField(base, "reason", fc.oneof(fc.string({ minLength: 501, maxLength: 600 }), notStringOrNull)),
    oneField(base, "actor", fc.oneof(fc.constant(""), fc.constant("a".repeat(201)), notString)),
    oneField(base, "source", fc.oneof(fc.string().filter((s) => !["telegram", "cli"].includes(s)), notString)),
    oneField(base, "update_id", notWholeNonNegative),
    unknownField(base),
    notAnObject,
  );
}

/** A draft-expire / draft-resurface job (`{draft_id, generation}`, valid as `base`) wrong in one field. */
export function badDraftTimer(base: Record<string, unknown>): fc.Arbitrary<BadPayload> {
  return fc.oneof(oneField(base, "draft_id", badDraftId), oneField(base, "generation", notWholeNonNegative), unknownField(base), notAnObject);
}

/** A rate-limit-release job (`{draft_id}`, valid as `base`) wrong in one field. */
export function badRateLimitRelease(base: Record<string, unknown>): fc.Arbitrary<BadPayload> {
  return fc.oneof(oneField(base, "draft_id", badDraftId), unknownField(base), notAnObject);
}

/** Whether a refusal's message names the field (an unknown field by its name, a whole-payload problem as such). */
export function namesField(message: string, field: string): boolean {
  if (field === "(top level)") return /expected object|\(top level\)|object/i.test(message);
  return message.includes(field);
}
