// What a sentence names of code: paths, files, dotfiles, endpoints, `code`, calls, identifiers, packages,
// events, and surface nouns with their modifiers ("the Stripe webhook handler") or bare ("the webhook").
import { isSpace } from "../../hints.js";
import { ACTION_VERBS, FRAMEWORK_DOT_JS, NOUN_LIKE_VERBS, STOPWORD_MODIFIERS, SURFACE_NOUNS } from "./lexicon.js";
import { addPhrase } from "./cues.js";

/** "strong": a file, endpoint, identifier, … or a surface noun with modifiers ("the Stripe webhook handler"); "bare": only a bare one ("the webhook"). */
export type SurfaceStrength = "strong" | "bare" | "none";

/** A dot followed by a word start: what file, dotfile and event surfaces all contain (a sentence's final dot is not one). */
const INNER_DOT = /\.[A-Za-z_]/;
/** What an identifier surface without an underscore contains (camelCase, PascalCase). */
const CAMEL_HUMP = /[a-z][A-Z]/;

/** `needs`: a cheap test without which the pattern cannot match (most sentences skip most patterns); `innerDot`: INNER_DOT, tested once. */
const SURFACE_PATTERNS: { kind: string; pattern: RegExp; needs: (s: string, innerDot: boolean) => boolean }[] = [
  { kind: "path", pattern: /(?<![\w@])(?:[\w.@[\]-]+\/)+[\w.[\]-]+\.(?:tsx?|jsx?|mjs|cjs|py|swift|kt|java|rb|go|rs|sql|json|ya?ml|toml|css|scss|html|md|prisma|sh)\b/g, needs: (s) => s.includes("/") },
  { kind: "file", pattern: /(?<![\w/.-])[\w-]+\.(?:tsx?|jsx?|mjs|cjs|py|swift|kt|java|rb|go|rs|sql|json|ya?ml|toml|prisma|sh)\b/g, needs: (_, innerDot) => innerDot },
  { kind: "dotfile", pattern: /(?<![\w/])\.(?:env[\w.*-]*|gitignore|github|npmrc|vercel)\b/g, needs: (_, innerDot) => innerDot },
  { kind: "endpoint", pattern: /(?<![\w.:/@-])\/[a-z][\w-]*(?:\/[\w{}[\]:.-]+)*/g, needs: (s) => s.includes("/") },
  { kind: "code", pattern: /`[^`\n]{2,80}`/g, needs: (s) => s.includes("`") },
  { kind: "call", pattern: /\b[A-Za-z_][\w.]*\(\)/g, needs: (s) => s.includes("()") },
  { kind: "identifier", pattern: /\b[a-z]+(?:[A-Z][a-z0-9]+)+\b|\b[A-Z][a-z0-9]+(?:[A-Z][a-z0-9]+){1,}\b(?=\.\w+\b|\(|\s+(?:in|class|struct|component|module|service|view|screen))|\b[a-z][a-z0-9]*(?:_[a-z0-9]+)+\b|\b[A-Z][A-Z0-9]*(?:_[A-Z0-9]+){2,}\b/g, needs: (s) => s.includes("_") || CAMEL_HUMP.test(s) },
  { kind: "package", pattern: /(?<![\w/])@?[a-z][\w.-]*(?:\/[\w.-]+)?@\d[\w.-]*|(?<![\w/])@[a-z][\w.-]*\/[\w.-]+/g, needs: (s) => s.includes("@") },
  { kind: "event", pattern: /\b[a-z]+\.[a-z_]+(?:\.[a-z_]+)*\b(?=[\s,.;)]|$)/g, needs: (_, innerDot) => innerDot },
];

/**
 * The alternatives of a case-insensitive pattern grouped by first letter, in their order: the same
 * matches, one letter test per group instead of a test per alternative. Each alternative starts with a letter.
 */
function byFirstLetter(alternatives: string): string {
  const groups = new Map<string, string[]>();
  for (const alternative of alternatives.split("|")) {
    const letter = alternative.charAt(0).toLowerCase();
    groups.set(letter, [...(groups.get(letter) ?? []), alternative.slice(1)]);
  }
  return [...groups].map(([letter, rests]) => `${letter}(?:${rests.join("|")})`).join("|");
}
const SURFACE_NOUN = byFirstLetter(SURFACE_NOUNS);

/** A run of surface nouns ("webhook handler", "code path"). */
const SURFACE_NOUN_RUN = new RegExp(String.raw`\b(?:${SURFACE_NOUN})(?:\s+(?:${SURFACE_NOUN}))*\b`, "gi");
const BARE_SURFACE = new RegExp(String.raw`\b(?:the|our|its)\s+(?:${SURFACE_NOUN})\b`, "gi");
/** A token that can start a surface noun: without one, both patterns above are skipped. */
export const SURFACE_FIRST_WORDS: ReadonlySet<string> = new Set(SURFACE_NOUNS.split("|").flatMap((alternative) => spellings(alternative.split(" ")[0] ?? "")));

/** Every spelling of a simple pattern word: "webhooks?" → webhook, webhooks; "repo(?:sitory)?" → repo, repository. */
function spellings(pattern: string): string[] {
  const optional = /^(.*?)(\(\?:([^()|]*)\)|([a-z]))\?(.*)$/.exec(pattern);
  if (!optional) return [pattern];
  const [, head = "", , group, char, tail = ""] = optional;
  return spellings(`${head}${tail}`).concat(spellings(`${head}${group ?? char ?? ""}${tail}`));
}

/** A word that may modify a surface noun, unless it is a number. */
const MODIFIER = /^[A-Za-z0-9][\w.'-]*$/;
const NUMBER = /^\d+$/;

const EVENT_FALSE_POSITIVES = /^(?:e\.g|i\.e|vs\.)|\.(?:js|ts|com|io|app|dev|net|org)$/i;

/** The matches of a global pattern, like `matchAll` without the copy of the pattern it makes per call. */
export function matchesOf(pattern: RegExp, text: string): RegExpExecArray[] {
  const found: RegExpExecArray[] = [];
  pattern.lastIndex = 0;
  for (let match = pattern.exec(text); match !== null; match = pattern.exec(text)) {
    if (match[0] === "") pattern.lastIndex++;
    found.push(match);
  }
  return found;
}

/**
 * Visits a sentence's code surfaces in order until `visit` returns true: the specific ones (paths, files,
 * identifiers, …, then surface nouns with modifiers) and, only when there is none of those, the bare surface
 * nouns. Returns the strength of what it found (stopping at the first is enough for a score).
 */
function visitSurfaces(sentence: string, nouns: boolean, visit: (phrase: string) => boolean): SurfaceStrength {
  let strong = false;
  const innerDot = INNER_DOT.test(sentence);
  for (const { kind, pattern, needs } of SURFACE_PATTERNS) {
    if (!needs(sentence, innerDot)) continue;
    for (const match of matchesOf(pattern, sentence)) {
      const text = match[0];
      if ((kind === "file" || kind === "path") && FRAMEWORK_DOT_JS.test(text.slice(text.lastIndexOf("/") + 1))) continue;
      if (kind === "event" && (EVENT_FALSE_POSITIVES.test(text) || FRAMEWORK_DOT_JS.test(text))) continue;
      if (kind === "endpoint" && text.length < 3) continue;
      strong = true;
      if (visit(text)) return "strong";
    }
  }
  if (!nouns) return strong ? "strong" : "none";
  // Named surfaces: a surface noun with up to three meaningful modifiers before it
  // ("the Stripe webhook handler", "RestoreAssist's iOS billing code path").
  for (const match of matchesOf(SURFACE_NOUN_RUN, sentence)) {
    const at = match.index ?? 0;
    const modifiers: string[] = [];
    // Words before the noun, read backwards within 120 characters (no split of the whole stretch).
    const floor = Math.max(0, at - 120);
    for (let end = at; modifiers.length < 3; ) {
      while (end > floor && isSpace(sentence.charCodeAt(end - 1))) end--;
      if (end === floor) break;
      let start = end;
      while (start > floor && !isSpace(sentence.charCodeAt(start - 1))) start--;
      const token = sentence.slice(start, end);
      end = start;
      if (!MODIFIER.test(token)) break;
      const lower = token.toLowerCase();
      if (STOPWORD_MODIFIERS.has(lower) || NUMBER.test(token)) break;
      if (ACTION_VERBS.has(lower) && !NOUN_LIKE_VERBS.has(lower)) break;
      modifiers.unshift(token);
    }
    if (modifiers.length === 0) continue;
    strong = true;
    if (visit(`${modifiers.join(" ")} ${match[0]}`)) return "strong";
  }
  if (strong) return "strong";
  let bare = false;
  for (const match of matchesOf(BARE_SURFACE, sentence)) {
    bare = true;
    if (visit(match[0])) return "bare";
  }
  return bare ? "bare" : "none";
}

const FIRST = () => true;

/** The strength of a sentence's surfaces, read only as far as the first; `nouns`: whether it has a word that can start a surface noun. */
export function surfaceStrength(sentence: string, nouns: boolean): SurfaceStrength {
  return visitSurfaces(sentence, nouns, FIRST);
}

/** The code surfaces a sentence names, each once: the strong ones, or else the bare ones. */
export function surfacePhrases(sentence: string, nouns: boolean): string[] {
  const found: string[] = [];
  visitSurfaces(sentence, nouns, (phrase) => {
    addPhrase(found, phrase);
    return false;
  });
  return found;
}
