// The destructive-verb gate: research that proposes destroying something needs more confidence (≥ 0.90
// instead of 0.75) before it may become a draft. This module finds the verbs, as actions on an object
// (verb-use.ts); the rule lives with the other bridge rules. Phrases ("rm -rf", "force push") always count.
import { foldableLiteral, foldableLower } from "../../hints.js";
import { escapeRegExp } from "../../escape-regexp.js";
import { isActionOnObject } from "./verb-use.js";

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

/** "drop" → drop, drops, dropped, dropping; "wipe" → wipe, wipes, wiped, wiping. */
function inflections(word: string): string[] {
  const forms = new Set([word, `${word}s`, `${word}es`, `${word}ed`, `${word}ing`]);
  if (word.endsWith("e")) {
    forms.add(`${word}d`);
    forms.add(`${word.slice(0, -1)}ing`);
  }
  if (word.endsWith("write")) forms.add(`${word.slice(0, -5)}written`).add(`${word.slice(0, -5)}wrote`);
  if (word.endsWith("y")) forms.add(`${word.slice(0, -1)}ies`).add(`${word.slice(0, -1)}ied`);
  // Consonant-vowel-consonant endings double: drop → dropped.
  if (/[^aeiou][aeiou][bcdfgklmnprstvz]$/.test(word)) {
    const last = word.at(-1) ?? "";
    forms.add(`${word}${last}ed`).add(`${word}${last}ing`);
  }
  return [...forms];
}

function compileVerbPattern(verb: string, flags: string): RegExp {
  const parts = verb.trim().toLowerCase().split(/\s+/);
  const body = parts
    .map((part) => (/^[a-z]+$/.test(part) ? `(?:${inflections(part).map(escapeRegExp).join("|")})` : escapeRegExp(part)))
    .join("[\\s-]+");
  // Word boundaries that also hold for "rm -rf" and "--hard"; "drop-in" is not "drop".
  return new RegExp(`(?<![\\p{L}\\p{N}_-])${body}(?![\\p{L}\\p{N}_]|-\\p{L})`, flags);
}

/** A literal every match of the verb's pattern holds: what all forms of its first word begin with. */
function verbNeedle(verb: string): string {
  const first = verb.trim().toLowerCase().split(/\s+/)[0] ?? "";
  const forms = /^[a-z]+$/.test(first) ? inflections(first) : [first];
  return forms.reduce((prefix, form) => {
    let i = 0;
    while (i < prefix.length && prefix[i] === form[i]) i++;
    return prefix.slice(0, i);
  });
}

/** What a verb of the list is checked with, worked out once per list. */
interface VerbCheck {
  readonly verb: string;
  /** Lower-case ASCII that every match holds; null: the pattern runs on every text (see foldableLower). */
  readonly needle: string | null;
  /** A single word (judged as an action on an object, "giu"); else a phrase, which always counts ("iu"). */
  readonly word: boolean;
  readonly pattern: RegExp;
}

const plans = new WeakMap<readonly string[], readonly VerbCheck[]>();

/** The checks of a list: the list is fixed for a process (config), the texts are many. */
function planOf(verbs: readonly string[]): readonly VerbCheck[] {
  let plan = plans.get(verbs);
  if (!plan) {
    const checks: VerbCheck[] = [];
    for (const verb of verbs) {
      if (verb.trim() === "" || checks.some((c) => c.verb === verb)) continue;
      const needle = verbNeedle(verb);
      const word = /^[a-z]+$/i.test(verb.trim());
      checks.push({ verb, needle: foldableLiteral(needle) ? needle : null, word, pattern: compileVerbPattern(verb, word ? "giu" : "iu") });
    }
    plan = checks;
    plans.set(verbs, plan);
  }
  return plan;
}

/** The destructive verbs (as listed in `verbs`) used as actions in `text`, in list order, each once. */
export function destructiveVerbsIn(text: string, verbs: readonly string[] = DEFAULT_DESTRUCTIVE_VERBS): string[] {
  const found: string[] = [];
  // A pattern runs only where its needle occurs; a text lower-casing cannot search that way runs every pattern.
  const lower = foldableLower(text);
  for (const { verb, needle, word, pattern } of planOf(verbs)) {
    if (lower !== null && needle !== null && !lower.includes(needle)) continue;
    if (!word) {
      if (pattern.test(text)) found.push(verb);
      continue;
    }
    pattern.lastIndex = 0;
    for (let match = pattern.exec(text); match !== null; match = pattern.exec(text)) {
      if (isActionOnObject(text, match.index, match.index + match[0].length)) {
        found.push(verb);
        break;
      }
    }
  }
  return found;
}
