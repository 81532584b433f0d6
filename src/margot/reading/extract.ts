// Extraction for action-shaped research: what to do, where, on which branch,
// how big, how we know it is done, and what is out of scope. Pure.
import { baseVerb } from "./directives.js";
import { readResearch, surfacesOf, type ResearchReading, type SentenceReading } from "./reading.js";
import type { ComplexityTier } from "../contract.js";
import { FNV1A_SEED, fnv1aStep } from "./fnv1a.js";
import { findProjectByRepo, projectSpellings, REPO_PATTERN, type Project } from "../projects.js";
import { foldableLiteral, foldableLower, matchesWithin } from "../../hints.js";
import { escapeRegExp } from "../../escape-regexp.js";

export type TargetSource = "explicit_repo" | "project_mention";

export interface TargetRepoDetection {
  /** "Owner/Name"; configured spelling when the repo is a configured project. */
  target_repo: string | null;
  /** The configured project's name, when the target is one. */
  project: string | null;
  source: TargetSource | null;
  /** When target_repo is null: what the founder is asked to choose from. */
  candidates: string[];
}

export interface ExtractedAction extends TargetRepoDetection {
  proposed_action: string;
  proposed_action_detail: string;
  proposed_branch: string;
  complexity_tier: ComplexityTier;
  max_files: number;
  acceptance_criteria: string[];
  out_of_scope: string[];
}

export interface ExtractOptions {
  projects: readonly Project[];
  /** Salts the branch name (use the interaction id) so two findings with one title get two branches. */
  interaction_id?: string;
}

export const TITLE_MAX_LENGTH = 80;
export const BRANCH_PREFIX = "margot/";
export const BRANCH_MAX_LENGTH = 60;

// ---------------------------------------------------------------- target repo

const GITHUB_URL = /github\.com\/([A-Za-z0-9-]{1,39})\/([A-Za-z0-9._-]{1,100})/gi;
const GITHUB_HOST = /github\.com/i;
const SLASH_PAIR = /(?<![\w@./:-])`?([A-Za-z0-9][A-Za-z0-9-]{0,38})\/([A-Za-z0-9._-]{1,100})`?(?![\w/-])/g;
const SLASH = /\//g;

/** Path roots and package scopes that look like owners but are not. */
const NOT_AN_OWNER = new Set([
  "src", "app", "apps", "lib", "libs", "api", "test", "tests", "spec", "pages", "components", "public", "dist",
  "build", "node_modules", "config", "scripts", "docs", "packages", "workers", "jobs", "queues", "next", "react",
  "node", "vite", "jest", "vitest", "rest", "v1", "v2", "v3", "http", "https", "www", "usr", "etc", "var", "tmp",
  "home", "bin", "opt", "dev",
]);
const NOT_A_REPO_PAIR = new Set([
  "ios/android", "android/ios", "tcp/ip", "ui/ux", "ux/ui", "b2b/b2c", "dev/prod", "p95/p99", "p50/p95", "n/a",
  "w/o", "km/h", "req/s", "24/7",
]);
const CODE_FILE = /\.(?:tsx?|jsx?|mjs|cjs|py|swift|kt|java|rb|go|rs|sql|json|ya?ml|toml|css|scss|html|md|prisma|sh|lock)$/i;
const REPO_CONTEXT_BEFORE = /\b(?:repo|repository|repositories|in|for|on|against|targeting|to|from|of|at)\s+`?$/i;
const REPO_WORD_NEAR = /\b(?:repo|repository)\b/i;

interface RepoMention {
  repo: string;
  index: number;
}

function explicitRepoMentions(text: string, projects: readonly Project[]): RepoMention[] {
  const found: RepoMention[] = [];
  const push = (repo: string, index: number) => {
    const clean = repo.replace(/\.git$/i, "").replace(/\.+$/, "");
    if (!REPO_PATTERN.test(clean)) return;
    const canonical = findProjectByRepo(projects, clean)?.repo ?? clean;
    found.push({ repo: canonical, index });
  };
  if (GITHUB_HOST.test(text)) for (const m of text.matchAll(GITHUB_URL)) push(`${m[1]}/${m[2]}`, m.index ?? 0);
  const owners = new Set(projects.map((p) => p.repo.split("/")[0]?.toLowerCase()));
  for (const m of matchesWithin(SLASH_PAIR, text, SLASH)) {
    const owner = m[1] ?? "";
    const name = (m[2] ?? "").replace(/\.+$/, "");
    const index = m.index ?? 0;
    const pair = `${owner}/${name}`;
    if (findProjectByRepo(projects, pair)) {
      push(pair, index);
      continue;
    }
    const lower = pair.toLowerCase();
    if (NOT_AN_OWNER.has(owner.toLowerCase()) || NOT_A_REPO_PAIR.has(lower) || CODE_FILE.test(name)) continue;
    if (/^\d+$/.test(owner) || /^\d+$/.test(name)) continue;
    const before = text.slice(Math.max(0, index - 40), index);
    const after = text.slice(index + m[0].length, index + m[0].length + 20);
    const backticked = m[0].startsWith("`") && m[0].endsWith("`");
    const strongContext =
      backticked ||
      owners.has(owner.toLowerCase()) ||
      REPO_WORD_NEAR.test(before.split(/\s+/).slice(-4).join(" ")) ||
      /^\s*(?:repo|repository)\b/i.test(after);
    const weakContext = REPO_CONTEXT_BEFORE.test(before);
    // Plain lowercase word pairs ("read/write") need a strong cue; anything else a preposition.
    const wordPair = /^[a-z]+$/.test(owner) && /^[a-z]+$/.test(name);
    if (strongContext || (weakContext && !wordPair)) push(pair, index);
  }
  return found.sort((a, b) => a.index - b.index);
}

interface Spelling {
  readonly pattern: RegExp;
  /** The longest part every match holds, lower case, when it is ASCII (see foldableLower); else null. */
  readonly part: string | null;
}

const spellings = new Map<string, Spelling>();

/** A project spelling as a pattern, compiled once: the projects are few, the texts many. */
function spellingOf(spelling: string): Spelling {
  let compiled = spellings.get(spelling);
  if (!compiled) {
    // "Pi-Dev-Ops" also matches "pi dev ops" and "PiDevOps".
    const body = escapeRegExp(spelling).replace(/[ -]+/g, "[\\s-]?");
    const part = spelling.toLowerCase().split(/[ -]+/).reduce((a, b) => (b.length > a.length ? b : a), "");
    compiled = { pattern: new RegExp(`(?<![\\p{L}\\p{N}_/-])${body}(?![\\p{L}\\p{N}_-])`, "giu"), part: foldableLiteral(part) ? part : null };
    spellings.set(spelling, compiled);
  }
  return compiled;
}

/** Whether the text names the project. `lower`: the text as foldableLower gives it (spellings whose part it lacks are not tried). */
function mentionsProject(text: string, lower: string | null, project: Project): boolean {
  for (const spelling of projectSpellings(project)) {
    const { pattern, part } = spellingOf(spelling);
    if (lower !== null && part !== null && !lower.includes(part)) continue;
    pattern.lastIndex = 0;
    if (pattern.test(text)) return true;
  }
  return false;
}

function distinct(list: readonly string[]): string[] {
  const seen = new Map<string, string>();
  for (const item of list) if (!seen.has(item.toLowerCase())) seen.set(item.toLowerCase(), item);
  return [...seen.values()];
}

/**
 * Which repo the research is about: an explicit `Owner/Name` in the action
 * sentence, else a configured project the action sentence names, else an explicit
 * `Owner/Name` anywhere (even when it is not configured — the allowlist rule
 * refuses it later), else a configured project named anywhere by name, repo name
 * or alias ("RestoreAssist's Stripe webhook"). Ambiguous or absent: null, with the
 * candidates the draft asks the founder to confirm (mentioned projects, else
 * every configured repo).
 */
export function detectTargetRepo(
  text: string,
  projects: readonly Project[],
  actionSentence: string | null = null,
): TargetRepoDetection {
  const resolve = (repo: string, source: TargetSource): TargetRepoDetection => ({
    target_repo: repo,
    project: findProjectByRepo(projects, repo)?.name ?? null,
    source,
    candidates: [],
  });

  const explicitInAction = actionSentence ? distinct(explicitRepoMentions(actionSentence, projects).map((m) => m.repo)) : [];
  if (explicitInAction.length === 1 && explicitInAction[0]) return resolve(explicitInAction[0], "explicit_repo");
  if (explicitInAction.length > 1) return { target_repo: null, project: null, source: null, candidates: explicitInAction };
  // The project the action sentence names outranks a repo written elsewhere: a line added to the body cannot move the action (ADR 0040).
  const actionLower = actionSentence ? foldableLower(actionSentence) : null;
  const inAction = actionSentence ? projects.filter((p) => mentionsProject(actionSentence, actionLower, p)) : [];
  if (inAction.length === 1 && inAction[0]) return resolve(inAction[0].repo, "project_mention");

  const explicitAll = distinct(explicitRepoMentions(text, projects).map((m) => m.repo));
  if (explicitAll.length === 1 && explicitAll[0]) return resolve(explicitAll[0], "explicit_repo");
  if (explicitAll.length > 1) return { target_repo: null, project: null, source: null, candidates: explicitAll };

  const textLower = foldableLower(text);
  const inText = projects.filter((p) => mentionsProject(text, textLower, p));
  if (inAction.length === 0 && inText.length === 1 && inText[0]) return resolve(inText[0].repo, "project_mention");
  const candidates = (inAction.length > 1 ? inAction : inText.length > 0 ? inText : projects).map((p) => p.repo);
  return { target_repo: null, project: null, source: null, candidates };
}

// ---------------------------------------------------------------- title and branch

/** Where a title stops: the first purpose, reason or aside clause after the verb phrase. */
const TITLE_CUT = new RegExp(
  [
    String.raw`\s+so\s+that\b`,
    String.raw`\s+so\s+(?=we|the|it|that|users?|customers?|a|an|no|duplicate|retries)\b`,
    String.raw`,?\s+(?:because|since)\b`,
    String.raw`,\s*which\b`,
    String.raw`\s+which\s+(?:will|should|would)\b`,
    String.raw`,?\s+(?:in\s+order\s+)?to\s+(?:cut|bring|reduce|prevent|avoid|keep|lower|improve|stop|make\s+sure|ensure|pick\s+up|free)\b`,
    String.raw`\s+by\s+(?=\w+ing\b)`, // "… by recording processed ids"
    String.raw`;|\s+[—–]\s+|:\s|\s+\(`,
    String.raw`,\s+(?:then|and\s+then|otherwise)\b`,
    String.raw`\s+before\s+the\b`,
  ].join("|"),
  "i",
);

function capitalise(s: string): string {
  return s.charAt(0).toUpperCase() + s.slice(1);
}

const PHRASE_BOUNDARY = /,\s|\s(?:and|with|through|to|from|for|in|on|using|via|by|after|before|under|behind|so)\s/g;

/** Shorten at the last phrase boundary that fits ("…route to hand out signed parameters"), else at a word, with "…". */
function truncateWords(s: string, max: number): string {
  if (s.length <= max) return s;
  let best = -1;
  for (const m of s.matchAll(PHRASE_BOUNDARY)) {
    const at = m.index ?? 0;
    if (at <= max && at >= 25) best = at;
  }
  if (best > 0) return s.slice(0, best).replace(/[\s,;:.-]+$/, "");
  const cut = s.slice(0, max - 1);
  const space = cut.lastIndexOf(" ");
  return `${(space > max / 2 ? cut.slice(0, space) : cut).replace(/[\s,;:.-]+$/, "")}…`;
}

const PRONOUN_SUBJECT = /^(?:we|you|i|the team|our team|the engineering team|engineering|engineers|developers|this|it|they|someone)$/i;
const FORMATTING = /[`*]+/g;

/**
 * A short imperative title (≤ 80 chars) from the action sentence:
 * "We should add idempotency to the Stripe webhook handler by recording …"
 * → "Add idempotency to the Stripe webhook handler"; "The auth middleware in
 * middleware.ts must set Secure …" → "Set Secure … in auth middleware in middleware.ts".
 */
export function actionTitle(sentence: SentenceReading | string): string {
  const reading = typeof sentence === "string" ? readResearch(sentence).best : sentence;
  const raw = reading?.text ?? (typeof sentence === "string" ? sentence : sentence.text);
  const directive = reading?.directive ?? null;
  let phrase = raw;
  let subject = "";
  if (directive) {
    if (directive.kind === "imperative") phrase = raw.slice(directive.start);
    else phrase = raw.slice(directive.end);
    if (directive.kind === "modal") {
      subject = raw.slice(0, directive.start).replace(/^.*[:,]\s*/, "").trim();
      phrase = phrase.replace(/^\s*(?:that\s+)?(?:we\s+|you\s+)?(?:(?:also|definitely|immediately|urgently|first|now|really)\s+)*/i, "");
      // Passive: "The webhook should be updated to …" → "Update the webhook to …".
      const passive = /^(?:be|get)\s+([a-z-]+)\b\s*/i.exec(phrase);
      const base = passive?.[1] ? baseVerb(passive[1]) : null;
      if (passive && base && subject) {
        phrase = `${base} ${subject}${phrase.slice(passive[0].length) ? ` ${phrase.slice(passive[0].length)}` : ""}`;
        subject = "";
      }
    }
  }
  phrase = phrase.replace(FORMATTING, "").replace(/^\s*(?:please\s+)/i, "");
  phrase = (phrase.split(TITLE_CUT)[0] ?? phrase).replace(/[\s.,;:!]+$/, "").replace(/\s+/g, " ").trim();
  // "adding a retry queue" → "add a retry queue".
  const first = /^[A-Za-z-]+/.exec(phrase)?.[0];
  const firstBase = first ? baseVerb(first) : null;
  if (first && firstBase && first.toLowerCase().endsWith("ing")) phrase = firstBase + phrase.slice(first.length);
  if (subject && !PRONOUN_SUBJECT.test(subject)) {
    const suffix = ` in ${subject.replace(FORMATTING, "").replace(/^(?:the|our)\s+/i, "")}`;
    const room = TITLE_MAX_LENGTH - suffix.length;
    if (!phrase.toLowerCase().includes(suffix.slice(4).toLowerCase()) && room >= 30) {
      phrase = `${truncateWords(phrase, room).replace(/…$/, "")}${suffix}`;
    }
  }
  const title = capitalise(phrase || raw.replace(FORMATTING, "").trim());
  return truncateWords(title, TITLE_MAX_LENGTH);
}

const SLUG_STOPWORDS = new Set(["the", "a", "an", "to", "of", "in", "on", "for", "and", "with", "from", "by", "at", "our", "its", "s"]);

const UTF8 = new TextEncoder();

/** 32-bit FNV-1a over the UTF-8 bytes, hex: a short stable suffix, not a security measure. */
function fnv1a(text: string): string {
  const bytes = UTF8.encode(text);
  let hash = FNV1A_SEED;
  for (let i = 0; i < bytes.length; i++) hash = fnv1aStep(hash, bytes[i]!);
  return (hash >>> 0).toString(16).padStart(8, "0");
}

/**
 * `margot/<slug>[-<8 hex of the salt>]`: lowercase [a-z0-9-], one slash,
 * ≤ 60 chars. Every output passes `git check-ref-format --branch` by
 * construction (no `..`, `//`, `.lock`, control characters, leading `-` or `.`).
 */
export function toBranchName(title: string, salt?: string): string {
  const suffix = salt ? `-${fnv1a(salt)}` : "";
  const room = BRANCH_MAX_LENGTH - BRANCH_PREFIX.length - suffix.length;
  const parts = title
    .normalize("NFKD")
    .replace(/\p{M}+/gu, "")
    .toLowerCase()
    .split(/[^a-z0-9]+/)
    .filter((w) => w !== "");
  // Short words carry little in a branch name; keep them only when little else is left.
  const meaningful = parts.filter((w) => !SLUG_STOPWORDS.has(w));
  let slug = (meaningful.length >= 2 ? meaningful : parts).join("-");
  if (slug.length > room) {
    const cut = slug.slice(0, room);
    const dash = cut.lastIndexOf("-");
    slug = dash > room / 2 ? cut.slice(0, dash) : cut;
    slug = slug.replace(/-+$/, "");
  }
  if (slug === "") slug = "action";
  return `${BRANCH_PREFIX}${slug}${suffix}`;
}

/** git's own rules for a branch name (`git check-ref-format --branch`). */
export function isValidGitBranchName(name: string): boolean {
  if (name === "" || name === "@" || name === "HEAD" || name.startsWith("-")) return false;
  if (name.startsWith("/") || name.endsWith("/") || name.endsWith(".") || name.includes("//")) return false;
  if (name.includes("..") || name.includes("@{")) return false;
  if (/[\x00-\x20\x7f~^:?*[\\]/.test(name)) return false;
  return name.split("/").every((part) => part !== "" && !part.startsWith(".") && !part.endsWith(".lock"));
}

/** Our stricter policy on top of git's: the shape `toBranchName` produces. */
export function isSafeBranchName(name: string): boolean {
  return (
    name.length <= BRANCH_MAX_LENGTH &&
    /^margot\/[a-z0-9]+(?:-[a-z0-9]+)*$/.test(name) &&
    isValidGitBranchName(name)
  );
}

// ---------------------------------------------------------------- size

const ADVANCED_CUES =
  /\b(?:migrat(?:e|ion)|refactor|rewrite|re-?architect|architecture|schema|backfill|queue|realtime|multi-?tenant|across\s+(?:all|every)|every\s+(?:handler|route|endpoint|table)|history|replace\s+\S+\s+with)\b/i;
const CODE_PATH = /(?<![\w@])(?:[\w.@[\]-]+\/)+[\w.[\]-]+\.(?:tsx?|jsx?|mjs|cjs|py|swift|kt|java|rb|go|rs|sql|json|ya?ml|toml|css|scss|html|prisma|sh)\b|(?<![\w/.-])[\w-]+\.(?:tsx?|jsx?|swift|py|sql|prisma|kt)\b/g;
/** The extension every CODE_PATH match ends in. */
const CODE_EXTENSION = /\.(?:tsx?|jsx?|mjs|cjs|py|swift|kt|java|rb|go|rs|sql|json|ya?ml|toml|css|scss|html|prisma|sh)\b/g;

/**
 * Complexity tier, from the action sentences (directives scoring ≥ 0.5):
 *   advanced — an advanced cue (migration, refactor, rewrite, schema, queue,
 *              transaction, backfill, history rewrite, "replace X with Y", …)
 *              together with ≥ 2 surfaces or ≥ 2 actions; or ≥ 5 surfaces; or ≥ 4 actions.
 *   detailed — an advanced cue, or ≥ 3 surfaces, or ≥ 2 actions.
 *   basic    — otherwise (one action on one or two surfaces).
 * max_files: max(tier base — 3 / 8 / 15 —, 2 × distinct code files named), capped at 40
 * (each named file plus its test).
 */
export function estimateSize(reading: ResearchReading): { complexity_tier: ComplexityTier; max_files: number } {
  const actions = actionSentences(reading);
  const surfaces = distinctSurfaces(actions.flatMap(surfacesOf));
  const advanced = actions.some((s) => ADVANCED_CUES.test(s.text));
  let tier: ComplexityTier = "basic";
  if ((advanced && (surfaces.length >= 2 || actions.length >= 2)) || surfaces.length >= 5 || actions.length >= 4) tier = "advanced";
  else if (advanced || surfaces.length >= 3 || actions.length >= 2) tier = "detailed";
  const files = distinct([...matchesWithin(CODE_PATH, reading.prose, CODE_EXTENSION)].map((m) => m[0]).filter((f) => !/^(?:next|node)\.js$/i.test(f)));
  const base = tier === "basic" ? 3 : tier === "detailed" ? 8 : 15;
  return { complexity_tier: tier, max_files: Math.min(40, Math.max(base, files.length * 2)) };
}

/** Surfaces, without the same thing named twice (`lib/a.ts`, lib/a.ts, a.ts). */
function distinctSurfaces(list: readonly string[]): string[] {
  const clean = distinct(list.map((s) => s.replace(/[`]/g, "").trim()).filter((s) => s !== ""));
  return clean.filter((s) => !clean.some((other) => other !== s && other.toLowerCase().includes(s.toLowerCase())));
}

function actionSentences(reading: ResearchReading): SentenceReading[] {
  const list = reading.sentences.filter((s) => s.directive !== null && s.score >= 0.5);
  if (reading.best && !list.includes(reading.best)) list.unshift(reading.best);
  return list.sort((a, b) => a.index - b.index);
}

// ---------------------------------------------------------------- criteria and scope

function tidy(s: string): string {
  return capitalise(s.replace(/[`*]/g, "").replace(/\s+/g, " ").replace(/^[\s,;:—–-]+|[\s,;:.]+$/g, "").trim());
}

const OUTCOME_CLAUSE =
  /\b(?:so\s+that|target:?|success\s+means|acceptance:?|goal:?|so\s+(?=we|the|it|users?|customers?|no|duplicate|retries))\s*(.+)$/i;
const TO_BRING = /\bto\s+(bring|cut|reduce|lower|keep|get)\s+(.+)$/i;
const EXPECTED_EFFECT =
  /\b(?:should|will|would)\s+(?:bring|cut|reduce|drop|lower|get|take|make)\b|\bbrings?\s+(?:it|this|that|\w+)\s+(?:down\s+)?to\b|^(?:target|success|goal|expected)\b|\bfrom\s+[^,;]*\d[^,;]*\s+to\s+(?:under\s+|below\s+)?\d/i;
const EFFECT_PARTICIPLE = /,\s*((?:reducing|cutting|lowering|bringing|eliminating|preventing|saving)\b.+)$/i;
const DRAW_OUTCOME = /\b(?:which\s+(?:will|should)|this\s+should)\s+(.+)$/i;

/**
 * Acceptance criteria: the outcome clauses of action and target sentences
 * ("so that …", "Target: …", "to bring X from A to B"), else generic lines
 * derived from the action.
 */
export function acceptanceCriteria(reading: ResearchReading, title: string): string[] {
  const criteria: string[] = [];
  const actions = new Set(actionSentences(reading));
  for (const s of reading.sentences) {
    if (s.negations.length > 0 || s.question || s.followUps.length > 0 || s.hedges.length > 0) continue;
    const isTarget = /^(?:target|success|acceptance|goal)\b/i.test(s.text) || /\bsuccess\s+means\b/i.test(s.text);
    if (!actions.has(s) && !isTarget && !(s.directive && s.measurable.length > 0)) continue;
    const clause =
      OUTCOME_CLAUSE.exec(s.text)?.[1] ??
      TO_BRING.exec(s.text)?.slice(1).join(" ") ??
      DRAW_OUTCOME.exec(s.text)?.[1] ??
      EFFECT_PARTICIPLE.exec(s.text)?.[1];
    if (clause) criteria.push(tidy(clause));
    else if (isTarget || s.measurable.length > 0) criteria.push(tidy(s.text));
  }
  // An expected effect right after the action ("This should bring … from 7.8% to under 1%"),
  // not a restatement of the problem ("p95 is 14 s today").
  const best = reading.best;
  if (best) {
    for (const next of reading.sentences.slice(best.index + 1, best.index + 3)) {
      if (next.measurable.length === 0 || next.negations.length > 0 || next.question || actions.has(next)) continue;
      if (!EXPECTED_EFFECT.test(next.text)) continue;
      criteria.push(tidy(DRAW_OUTCOME.exec(next.text)?.[1] ?? OUTCOME_CLAUSE.exec(next.text)?.[1] ?? next.text));
    }
  }
  const unique = distinct(criteria.filter((c) => c.length > 3)).slice(0, 6);
  if (unique.length > 0) return unique;
  return [
    `${title.replace(/…$/, "")}: done as described in the proposed action`,
    "A test covers the change (it fails before the change and passes after)",
    "Existing tests and type checks pass",
  ];
}

const OUT_OF_SCOPE_MARK = /\b(?:out\s+of\s+scope|not\s+in\s+scope|outside\s+(?:the\s+)?scope|non-goals?)\b\s*:?\s*(.*)$/i;
const LATER_MARK = /\b(?:can|could|will|should)\s+(?:follow|come)\b.*\blater\b|\bin\s+a\s+(?:follow-?up|separate)\s+(?:ticket|pr|change|issue)\b|\bseparately\b|\bfuture\s+(?:ticket|work|pr)\b/i;
const WITHOUT_CLAUSE = /\bwithout\s+([^,;.]+)/i;

/** Out of scope: explicit "out of scope" lines, negated "no need to change X" lines, "later"/"separately" lines, "without …" clauses. */
export function outOfScope(reading: ResearchReading, title: string): string[] {
  const lines: string[] = [];
  const actions = new Set(actionSentences(reading));
  for (const s of reading.sentences) {
    const marked = OUT_OF_SCOPE_MARK.exec(s.text);
    if (marked) {
      lines.push(tidy(marked[1] || s.text));
      continue;
    }
    if (s.negations.length > 0 && !s.question) {
      lines.push(tidy(s.text.replace(/^(?:there\s+is\s+|there's\s+)/i, "")));
      continue;
    }
    if (!actions.has(s) && LATER_MARK.test(s.text)) {
      lines.push(tidy(s.text));
      continue;
    }
    if (actions.has(s)) {
      const without = WITHOUT_CLAUSE.exec(s.text);
      if (without?.[1]) lines.push(tidy(`Without ${without[1]}`));
    }
  }
  const unique = distinct(lines.filter((l) => l.length > 3)).slice(0, 6);
  if (unique.length > 0) return unique;
  return [`Anything beyond "${title.replace(/…$/, "")}"; related problems found along the way go in a new ticket`];
}

// ---------------------------------------------------------------- all together

function actionDetail(reading: ResearchReading, fallback: string): string {
  const sentences = actionSentences(reading).slice(0, 6);
  if (sentences.length === 0) return fallback;
  if (sentences.length === 1) return sentences[0]?.text ?? fallback;
  return sentences.map((s) => `- ${s.text}`).join("\n");
}

/** Everything the ticket needs from an action-shaped research body. */
/** Extraction works on the reading `classify` used: the text is read once. */
export function extractAction(reading: ResearchReading, options: ExtractOptions): ExtractedAction {
  const best = reading.best;
  const title = best ? actionTitle(best) : truncateWords(tidy(reading.sentences[0]?.text ?? "Margot proposed action"), TITLE_MAX_LENGTH);
  const target = detectTargetRepo(reading.prose, options.projects, best?.text ?? null);
  return {
    ...target,
    proposed_action: title,
    proposed_action_detail: actionDetail(reading, title),
    proposed_branch: toBranchName(title, options.interaction_id),
    ...estimateSize(reading),
    acceptance_criteria: acceptanceCriteria(reading, title),
    out_of_scope: outOfScope(reading, title),
  };
}
