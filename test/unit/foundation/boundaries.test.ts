// docs/contracts.md's dependency direction: entry points → queues/ → src/<domain>; nothing imports upward.
import { readdirSync, readFileSync, statSync } from "node:fs";
import { join, relative, resolve } from "node:path";
import { describe, expect, it } from "vitest";

const root = resolve(import.meta.dirname, "../../..");

function tsFiles(dir: string): string[] {
  return readdirSync(dir).flatMap((name) => {
    const p = join(dir, name);
    return statSync(p).isDirectory() ? tsFiles(p) : p.endsWith(".ts") ? [p] : [];
  });
}

function importsOf(file: string): string[] {
  const text = readFileSync(file, "utf8");
  return [...text.matchAll(/(?:from|import)\s*\(?\s*["']([^"']+)["']/g)].map((m) => resolve(join(file, ".."), m[1]!)).filter((p) => p.startsWith(root));
}

const inDir = (p: string, dir: string) => relative(join(root, dir), p).split("/")[0] !== "..";
const ENTRY_POINTS = ["src/cli", "src/http"];

/** Each import of `files` into one of `dirs`, as "file → import". */
function crossings(files: readonly string[], dirs: readonly string[]): string[] {
  return files.flatMap((f) => importsOf(f).filter((i) => dirs.some((d) => inDir(i, d))).map((i) => `${relative(root, f)} → ${relative(root, i)}`));
}

// src/sandcastle/'s layers: the shared wire at its root, worker/ (the run from the worker's side), containers/,
// retention/, and the programs child/ and container-main/; egress/ is the run's network policy.
const SANDCASTLE = "src/sandcastle";
const [WORKER, CONTAINERS, RETENTION, CHILD, EGRESS] = ["worker", "containers", "retention", "child", "egress"].map((d) => `${SANDCASTLE}/${d}`) as [
  string, string, string, string, string,
];
const rootWire = () => readdirSync(join(root, SANDCASTLE)).filter((name) => name.endsWith(".ts")).map((name) => join(root, SANDCASTLE, name));

describe("import boundaries", () => {
  it("domain code in src/ imports neither queues/ nor workers/", () => {
    const domain = tsFiles(join(root, "src")).filter((f) => !ENTRY_POINTS.some((e) => inDir(f, e)));
    expect(crossings(domain, ["queues", "workers"])).toEqual([]);
  });

  it("queues/ never imports workers/ (producers import queues/ alone)", () => {
    expect(crossings(tsFiles(join(root, "queues")), ["workers"])).toEqual([]);
  });

  it("src/review/ (channels, reaction vocabulary) never imports src/margot/: drafts live in margot/drafts.ts", () => {
    expect(crossings(tsFiles(join(root, "src/review")), ["src/margot"])).toEqual([]);
  });

  it("src/margot/reading/ (the text reader) imports nothing of src/margot/store/ or src/margot/bridge/", () => {
    expect(crossings(tsFiles(join(root, "src/margot/reading")), ["src/margot/store", "src/margot/bridge"])).toEqual([]);
  });

  it("src/margot/store/ (drafts, intents, effects, rows) never imports src/margot/bridge/: the flows use the stores", () => {
    expect(crossings(tsFiles(join(root, "src/margot/store")), ["src/margot/bridge"])).toEqual([]);
  });

  it("src/sandcastle/'s root (the wire: contract, protocol, line splitter, …) imports nothing of worker/, containers/, retention/ or child/", () => {
    expect(rootWire().length).toBeGreaterThan(0);
    expect(crossings(rootWire(), [WORKER, CONTAINERS, RETENTION, CHILD])).toEqual([]);
  });

  it("src/sandcastle/child/ (the run's own program) imports nothing of worker/ or retention/: the worker's side, never loaded by the child", () => {
    expect(crossings(tsFiles(join(root, CHILD)), [WORKER, RETENTION])).toEqual([]);
  });

  it("src/sandcastle/worker/ imports nothing of child/: it spawns the child program, never loads it", () => {
    expect(crossings(tsFiles(join(root, WORKER)), [CHILD])).toEqual([]);
  });

  it("src/sandcastle/containers/ imports nothing of worker/, retention/ or child/: the worker, the child and retention all use it", () => {
    expect(crossings(tsFiles(join(root, CONTAINERS)), [WORKER, RETENTION, CHILD])).toEqual([]);
  });

  it("src/sandcastle/retention/ imports nothing of worker/ or child/: the worker keeps a run, retention never runs one", () => {
    expect(crossings(tsFiles(join(root, RETENTION)), [WORKER, CHILD])).toEqual([]);
  });

  it("src/sandcastle/egress/ imports nothing of worker/, containers/, retention/ or child/: both sides use it", () => {
    expect(crossings(tsFiles(join(root, EGRESS)), [WORKER, CONTAINERS, RETENTION, CHILD])).toEqual([]);
  });

  it("src/session-log/ imports nothing of src/sandcastle/ but its root's wire", () => {
    expect(crossings(tsFiles(join(root, "src/session-log")), [WORKER, CONTAINERS, RETENTION, CHILD, EGRESS])).toEqual([]);
  });

  it("ioredis's values are loaded through src/redis/ioredis.ts alone (it turns String.prototype fast again, ADR 0025)", () => {
    const files = ["src", "queues", "workers", "bench"].flatMap((d) => tsFiles(join(root, d)));
    const direct = /^import\s+(?!type\b)[^;]*from\s+["']ioredis["']/m;
    const offenders = files.filter((f) => relative(root, f) !== "src/redis/ioredis.ts" && direct.test(readFileSync(f, "utf8")));
    expect(offenders.map((f) => relative(root, f))).toEqual([]);
  });

  it("src/sandcastle/container-main/ (mounted into every run container, run by the image's node) imports node: builtins and its own files only", () => {
    const dir = join(root, "src/sandcastle/container-main");
    const files = readdirSync(dir).filter((name) => name.endsWith(".mts"));
    expect(files).toContain("main.mts");
    const offenders = files.flatMap((name) =>
      [...readFileSync(join(dir, name), "utf8").matchAll(/(?:from|import)\s*\(?\s*["']([^"']+)["']/g)].map((m) => m[1]!).filter((spec) => !spec.startsWith("node:") && !/^\.\/[\w-]+\.mjs$/.test(spec)).map((spec) => `${name} → ${spec}`),
    );
    expect(offenders).toEqual([]);
  });

  it("src/redact and the classifier are pure: no I/O imports", () => {
    const pure = [
      ...tsFiles(join(root, "src/redact")),
      ...tsFiles(join(root, "src/margot/reading")),
      join(root, "src/hints.ts"),
      join(root, "src/escape-regexp.ts"),
    ];
    const io = /from\s+["'](node:)?(fs|fs\/promises|net|http|https|child_process|ioredis|bullmq)["']/;
    expect(pure.filter((f) => io.test(readFileSync(f, "utf8"))).map((f) => relative(root, f))).toEqual([]);
  });
});
