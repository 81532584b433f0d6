// What an agent changed in its repository beyond its branch (ADR 0033). None of it takes effect — the host
// takes the branch from a bundle and never reads the agent's git dir — but an agent that moves `main`,
// plants a hook or sets `core.fsmonitor` tried something an operator wants to see: a log line, the result's
// `refused_changes`, an audit row. Read once the container is gone, as plain files: never through a
// symlink, never by running git, with sizes bounded. Names only (a ref, a config key, a hook's file name).
import { constants, type Stats } from "node:fs";
import { lstat, open, readdir } from "node:fs/promises";
import { join, relative } from "node:path";
import type { AgentRepository } from "./agent-repository.js";
import { branchRef } from "./repository.js";

/** A report, not a transcript: the first ones, then a count. */
const MAX_CHANGES = 40;
const MAX_NAME = 120;
const MAX_FILE_BYTES = 32 * 2 ** 20;
const MAX_WALK = 20_000;
const OBJECT_ID = /^[0-9a-f]{40}([0-9a-f]{24})?$/;
/** What git itself keeps in objects/info. */
const GIT_OBJECT_INFO = new Set(["alternates", "packs", "commit-graph", "commit-graphs"]);
/** Top-level entries of a git dir that make it borrow or point elsewhere. */
const POINTERS = ["commondir", "gitdir", "worktrees", "modules"];

/** Printable, bounded: an agent's ref or file name may hold anything. */
function shown(name: string): string {
  const clean = name.replace(/[\u0000-\u001f\u007f-\u009f\u2028\u2029]/g, "?");
  return clean.length > MAX_NAME ? `${clean.slice(0, MAX_NAME)}…` : clean;
}

/** A regular file's text, or undefined (missing, a symlink, a FIFO, too large). */
async function readPlain(path: string): Promise<string | undefined> {
  const st = await lstat(path).catch(() => undefined);
  if (st === undefined || !st.isFile() || st.size > MAX_FILE_BYTES) return undefined;
  const fh = await open(path, constants.O_RDONLY | constants.O_NOFOLLOW | constants.O_NONBLOCK).catch(() => undefined);
  if (fh === undefined) return undefined;
  try {
    return await fh.readFile("utf8");
  } finally {
    await fh.close();
  }
}

/** The names in a directory that is one (a symlink to one is not read: it could point anywhere on the host). */
async function entries(dir: string): Promise<string[]> {
  const st = await lstat(dir).catch(() => undefined);
  return st?.isDirectory() ? readdir(dir).catch(() => []) : [];
}

/**
 * Every entry under `root`, each with its lstat, directories entered (never through a symlink) where `descend` allows;
 * at most MAX_WALK entries, so a git dir of millions of files costs a bounded walk.
 */
async function walkBounded(
  root: string,
  visit: (path: string, st: Stats) => void | Promise<void>,
  descend: (dir: string, name: string) => boolean = () => true,
): Promise<void> {
  let seen = 0;
  const walk = async (dir: string): Promise<void> => {
    for (const name of await entries(dir)) {
      if (++seen > MAX_WALK) return;
      const path = join(dir, name);
      const st = await lstat(path).catch(() => undefined);
      if (st === undefined) continue;
      await visit(path, st);
      if (st.isDirectory() && descend(dir, name)) await walk(path);
    }
  };
  await walk(root);
}

/** Loose refs over packed ones, as git reads them; symbolic refs as `ref: <target>`. */
async function currentRefs(gitDir: string): Promise<Map<string, string>> {
  const refs = new Map<string, string>();
  for (const line of ((await readPlain(join(gitDir, "packed-refs"))) ?? "").split("\n")) {
    if (line.startsWith("#") || line.startsWith("^")) continue;
    const space = line.indexOf(" ");
    if (space > 0 && OBJECT_ID.test(line.slice(0, space))) refs.set(line.slice(space + 1), line.slice(0, space));
  }
  await walkBounded(join(gitDir, "refs"), async (path, st) => {
    if (!st.isFile()) return;
    const text = (await readPlain(path))?.trim();
    if (text !== undefined && text.length > 0) refs.set(relative(gitDir, path), text);
  });
  return refs;
}

/** `section[.subsection].key` → values, from git's config syntax (enough to name what was set). */
export function configKeys(text: string): Map<string, string[]> {
  const keys = new Map<string, string[]>();
  let section = "";
  for (const raw of text.split("\n")) {
    const line = raw.trim();
    if (line.length === 0 || line.startsWith("#") || line.startsWith(";")) continue;
    const header = /^\[\s*([A-Za-z0-9.-]+)(?:\s+"((?:[^"\\]|\\.)*)")?\s*\]\s*(.*)$/.exec(line);
    if (header !== null) {
      section = header[2] !== undefined ? `${header[1]!.toLowerCase()}.${header[2]}` : header[1]!.toLowerCase();
      if (header[3]!.length === 0) continue;
    }
    const body = header !== null ? header[3]! : line;
    const eq = body.indexOf("=");
    const key = `${section}.${(eq < 0 ? body : body.slice(0, eq)).trim().toLowerCase()}`;
    const value = eq < 0 ? "true" : body.slice(eq + 1).trim();
    keys.set(key, [...(keys.get(key) ?? []), value]);
  }
  return keys;
}

function configChanges(before: string, after: string | undefined): string[] {
  if (after === undefined) return ["git config: .git/config is no longer a plain file"];
  if (after === before) return [];
  const was = configKeys(before);
  const now = configKeys(after);
  const changed = [...new Set([...was.keys(), ...now.keys()])].filter((k) => JSON.stringify(was.get(k)) !== JSON.stringify(now.get(k)));
  return changed.map((key) => `git config: ${key} ${now.has(key) ? "set" : "removed"}`);
}

/** Symlinks anywhere in the git dir (loose objects' fan-out left out: git never reads a link there for us). */
async function symlinks(gitDir: string): Promise<string[]> {
  const found: string[] = [];
  const looseObjects = (dir: string, name: string) => dir === join(gitDir, "objects") && /^[0-9a-f]{2}$/.test(name);
  await walkBounded(
    gitDir,
    (path, st) => {
      if (st.isSymbolicLink()) found.push(`symlink .git/${relative(gitDir, path)}`);
    },
    (dir, name) => !looseObjects(dir, name),
  );
  return found;
}

/** The changes outside the agent's branch, each as a short line; empty when it kept to its branch. */
export async function refusedChanges(repo: AgentRepository): Promise<string[]> {
  const gitDir = join(repo.dir, ".git");
  const top = await lstat(gitDir).catch(() => undefined);
  if (top === undefined || !top.isDirectory()) return ["the repository's .git was replaced or removed"];
  const changes: string[] = [];

  const own = branchRef(repo.branch);
  const now = await currentRefs(gitDir);
  for (const [name, id] of repo.refs) {
    if (name === own) continue;
    const current = now.get(name);
    if (current === undefined) changes.push(`deleted ${name}`);
    else if (current !== id) changes.push(`moved ${name}`);
  }
  for (const name of now.keys()) if (name !== own && !repo.refs.has(name)) changes.push(`created ${name}`);

  changes.push(...configChanges(repo.config, await readPlain(join(gitDir, "config"))));
  for (const name of await entries(join(gitDir, "hooks"))) changes.push(`hook ${name}`);
  for (const name of await entries(join(gitDir, "info"))) changes.push(`.git/info/${name}`);
  // objects/ itself must be a directory before anything under it is read.
  const objectInfo = (await lstat(join(gitDir, "objects")).catch(() => undefined))?.isDirectory() ? join(gitDir, "objects", "info") : undefined;
  for (const name of objectInfo !== undefined ? await entries(objectInfo) : []) if (!GIT_OBJECT_INFO.has(name)) changes.push(`.git/objects/info/${name}`);
  const alternates =
    objectInfo !== undefined && (await lstat(objectInfo).catch(() => undefined))?.isDirectory() ? await readPlain(join(objectInfo, "alternates")) : undefined;
  if (alternates?.trim() !== repo.objectDirs[0]) changes.push("alternates changed");
  for (const name of POINTERS) if ((await lstat(join(gitDir, name)).catch(() => undefined)) !== undefined) changes.push(`.git/${name}`);
  changes.push(...(await symlinks(gitDir)));

  const unique = [...new Set(changes)].map(shown);
  return unique.length > MAX_CHANGES ? [...unique.slice(0, MAX_CHANGES), `… and ${unique.length - MAX_CHANGES} more`] : unique;
}
