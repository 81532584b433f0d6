// The seed's "action verb scrubber": research that proposes destroying
// something needs more confidence (≥ 0.90 instead of 0.75) before it may
// become a draft. This module only finds the verbs; the rule lives with the
// other bridge rules.

/** Confidence a destructive proposal needs before it may be drafted. */
export const DESTRUCTIVE_CONFIDENCE_FLOOR = 0.9;

/**
 * Default for MARGOT_DESTRUCTIVE_VERBS. Single words match their inflections
 * too ("deleting", "dropped", "wipes"), so the gate cannot be dodged by tense;
 * phrases match with spaces or hyphens between their words ("force-push").
 */
export const DEFAULT_DESTRUCTIVE_VERBS: readonly string[] = Object.freeze([
  "delete",
  "drop",
  "destroy",
  "truncate",
  "wipe",
  "purge",
  "erase",
  "remove all",
  "rm -rf",
  "force push",
  "reset --hard",
  "overwrite",
]);

/**
 * Parse MARGOT_DESTRUCTIVE_VERBS: comma-separated, case-insensitive, blanks
 * ignored. Unset or blank means the defaults (an empty list would silently
 * switch the gate off; to relax it, list fewer verbs).
 */
export function parseDestructiveVerbs(value: string | undefined): string[] {
  const verbs = (value ?? "")
    .split(",")
    .map((v) => v.trim().toLowerCase().replace(/\s+/g, " "))
    .filter((v) => v !== "");
  return verbs.length > 0 ? [...new Set(verbs)] : [...DEFAULT_DESTRUCTIVE_VERBS];
}

function escapeRegExp(s: string): string {
  return s.replace(/[.*+?^${}()|[\]\\]/g, "\\$&");
}

/** "drop" → drop, drops, dropped, dropping; "wipe" → wipe, wipes, wiped, wiping. */
function inflections(word: string): string[] {
  const forms = new Set([word, `${word}s`, `${word}es`, `${word}ed`, `${word}ing`]);
  if (word.endsWith("e")) {
    forms.add(`${word}d`);
    forms.add(`${word.slice(0, -1)}ing`);
  }
  if (word.endsWith("y")) forms.add(`${word.slice(0, -1)}ies`).add(`${word.slice(0, -1)}ied`);
  // Consonant-vowel-consonant endings double: drop → dropped.
  if (/[^aeiou][aeiou][bcdfgklmnprstvz]$/.test(word)) {
    const last = word.at(-1) ?? "";
    forms.add(`${word}${last}ed`).add(`${word}${last}ing`);
  }
  return [...forms];
}

function verbPattern(verb: string): RegExp {
  const parts = verb.trim().toLowerCase().split(/\s+/);
  const body = parts
    .map((part) => (/^[a-z]+$/.test(part) ? `(?:${inflections(part).map(escapeRegExp).join("|")})` : escapeRegExp(part)))
    .join("[\\s-]+");
  // Word boundaries that also hold for "rm -rf" and "--hard"; "drop-in" is not "drop".
  return new RegExp(`(?<![\\p{L}\\p{N}_-])${body}(?![\\p{L}\\p{N}_]|-\\p{L})`, "iu");
}

/** The destructive verbs (as listed in `verbs`) that occur in `text`, in list order, each once. */
export function destructiveVerbsIn(text: string, verbs: readonly string[] = DEFAULT_DESTRUCTIVE_VERBS): string[] {
  const found: string[] = [];
  for (const verb of verbs) {
    if (verb.trim() === "" || found.includes(verb)) continue;
    if (verbPattern(verb).test(text)) found.push(verb);
  }
  return found;
}
