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

describe("import boundaries", () => {
  it("domain code in src/ imports neither queues/ nor workers/", () => {
    const offenders = tsFiles(join(root, "src"))
      .filter((f) => !ENTRY_POINTS.some((e) => inDir(f, e)))
      .flatMap((f) => importsOf(f).filter((i) => inDir(i, "queues") || inDir(i, "workers")).map((i) => `${relative(root, f)} → ${relative(root, i)}`));
    expect(offenders).toEqual([]);
  });

  it("queues/ never imports workers/ (producers import queues/ alone)", () => {
    const offenders = tsFiles(join(root, "queues")).flatMap((f) => importsOf(f).filter((i) => inDir(i, "workers")).map((i) => `${relative(root, f)} → ${relative(root, i)}`));
    expect(offenders).toEqual([]);
  });

  it("src/review/ (channels, reaction vocabulary) never imports src/margot/: drafts live in margot/drafts.ts", () => {
    const offenders = tsFiles(join(root, "src/review")).flatMap((f) => importsOf(f).filter((i) => inDir(i, "src/margot")).map((i) => `${relative(root, f)} → ${relative(root, i)}`));
    expect(offenders).toEqual([]);
  });

  it("ioredis's values are loaded through src/redis/ioredis.ts alone (it turns String.prototype fast again, ADR 0030)", () => {
    const files = ["src", "queues", "workers", "bench"].flatMap((d) => tsFiles(join(root, d)));
    const direct = /^import\s+(?!type\b)[^;]*from\s+["']ioredis["']/m;
    const offenders = files.filter((f) => relative(root, f) !== "src/redis/ioredis.ts" && direct.test(readFileSync(f, "utf8")));
    expect(offenders.map((f) => relative(root, f))).toEqual([]);
  });

  it("src/redact and the classifier are pure: no I/O imports", () => {
    const pure = [...tsFiles(join(root, "src/redact")), join(root, "src/margot/classify.ts")];
    const io = /from\s+["'](node:)?(fs|fs\/promises|net|http|https|child_process|ioredis|bullmq)["']/;
    expect(pure.filter((f) => io.test(readFileSync(f, "utf8"))).map((f) => relative(root, f))).toEqual([]);
  });
});
