// ESLint, kept small (as graphile-worker's): type-only imports, the import zones of docs/contracts.md (held also by
// test/unit/foundation/boundaries.test.ts), a line length, and a few cheap correctness rules the code already passes.
import stylistic from "@stylistic/eslint-plugin";
import { defineConfig } from "eslint/config";
import tseslint from "typescript-eslint";

// A zone's rule is a regex over an import's specifier: our folder names are distinct, so the relative path names them.
const DOMAIN = { regex: "^(\\.\\./)+(queues|workers)/", message: "domain code in src/ imports neither queues/ nor workers/ (docs/contracts.md)" };
const zones = [
  { files: ["src/**/*.{ts,mts}"], ignores: ["src/cli/**", "src/http/**"], patterns: [DOMAIN] },
  { files: ["queues/**/*.ts"], patterns: [{ regex: "^\\.\\./workers/", message: "queues/ never imports workers/: producers import queues/ alone" }] },
  { files: ["src/review/**/*.ts"], patterns: [DOMAIN, { regex: "^\\.\\./margot/", message: "review/ never imports margot/" }] },
  {
    files: ["src/margot/reading/**/*.ts"],
    patterns: [DOMAIN, { regex: "^\\.\\./(store|bridge)/", message: "the text reader imports nothing of store/ or bridge/" }],
  },
  { files: ["src/margot/store/**/*.ts"], patterns: [DOMAIN, { regex: "^\\.\\./bridge/", message: "store/ never imports bridge/: the flows use the stores" }] },
  {
    files: ["src/sandcastle/*.ts"],
    patterns: [DOMAIN, { regex: "^\\./(worker|containers|retention|child)/", message: "sandcastle/'s root is the wire both sides share: it imports no layer" }],
  },
  {
    files: ["src/sandcastle/child/**/*.ts"],
    patterns: [DOMAIN, { regex: "^(\\.\\./)+(worker|retention)/", message: "the child imports nothing of the worker's side" }],
  },
  {
    files: ["src/sandcastle/worker/**/*.ts"],
    patterns: [DOMAIN, { regex: "^\\.\\./child/", message: "the worker spawns the child program, never imports it" }],
  },
  {
    files: ["src/sandcastle/containers/**/*.ts"],
    patterns: [DOMAIN, { regex: "^\\.\\./(worker|retention|child)/", message: "containers/ imports nothing of worker/, retention/ or child/" }],
  },
  {
    files: ["src/sandcastle/retention/**/*.ts"],
    patterns: [DOMAIN, { regex: "^\\.\\./(worker|child)/", message: "retention/ imports nothing of worker/ or child/" }],
  },
  {
    files: ["src/sandcastle/egress/**/*.ts"],
    patterns: [DOMAIN, { regex: "^\\.\\./(worker|containers|retention|child)/", message: "egress/ imports sandcastle/'s root alone" }],
  },
  {
    files: ["src/sandcastle/container-main/**/*.mts"],
    patterns: [{ regex: "^(?!node:|\\./[\\w-]+\\.mjs$)", message: "container-main/ runs on the image's node: node: builtins and its own files only" }],
  },
  {
    files: ["src/session-log/**/*.ts"],
    patterns: [DOMAIN, { regex: "^\\.\\./sandcastle/[^/]+/", message: "session-log/ imports of sandcastle/ its root's wire alone" }],
  },
];

// ioredis's values through src/redis/ioredis.ts alone (ADR 0030); the pure modules import no I/O at all.
const IOREDIS = { name: "ioredis", allowTypeImports: true, message: "load ioredis through src/redis/ioredis.ts (ADR 0030)" };
const IO = ["fs", "fs/promises", "net", "http", "https", "child_process", "bullmq"]
  .flatMap((m) => [m, `node:${m}`])
  .map((name) => ({ name, message: "a pure module does no I/O" }));
const PURE = ["src/redact/**/*.ts", "src/margot/reading/**/*.ts", "src/hints.ts", "src/escape-regexp.ts"];

// A line that is one text: a string or template literal alone (after `return`, a ternary's `?` or `:`, or a property's
// name; then at most ` +`, `,`, `)` or `;`), or a test's title with its callback.
const TEXT_LINE = /^\s*(?:(?:it|test|describe)(?:\.\w+)*(?:\([^)]*\))?\(|return |[?:] |[\w$]+: )?(["'`]).*\1(?:, (?:async )?\((?:\) => \{|\{)|(?: \+)?[,;)]*)$/u
  .source;

export default defineConfig(
  { ignores: ["dist/**", "node_modules/**", ".node/**", "**/*.js", "**/*.mjs"] },
  {
    files: ["{src,workers,queues,bench,test,scripts}/**/*.{ts,mts}"],
    languageOptions: { parser: tseslint.parser, ecmaVersion: 2023, sourceType: "module" },
    plugins: { "@typescript-eslint": tseslint.plugin, "@stylistic": stylistic },
    linterOptions: { reportUnusedDisableDirectives: "error" },
    rules: {
      // `typeof import(…)` stays allowed: the type of a module loaded lazily, on purpose.
      "@typescript-eslint/consistent-type-imports": ["error", { prefer: "type-imports", fixStyle: "inline-type-imports", disallowTypeAnnotations: false }],
      // Code around strings is reflowed like any code, but a text is not cut: a line holding one string or template
      // literal alone, or a test's title with its callback, may run long (a message cut in two cannot be grepped for,
      // and prettier keeps a test's title line whole too). A regex literal cut in two would stop being one.
      "@stylistic/max-len": ["error", { code: 160, tabWidth: 2, ignoreUrls: true, ignoreRegExpLiterals: true, ignorePattern: TEXT_LINE }],
      "no-debugger": "error",
      "no-dupe-else-if": "error",
      "no-duplicate-case": "error",
      "no-self-assign": "error",
      "no-self-compare": "error",
      "no-unsafe-finally": "error",
      "no-unreachable": "error",
      "no-constant-binary-expression": "error",
      "no-duplicate-imports": "error",
    },
  },
  ...zones.map(({ files, ignores, patterns }) => ({ files, ...(ignores ? { ignores } : {}), rules: { "no-restricted-imports": ["error", { patterns }] } })),
  {
    files: ["{src,queues,workers,bench}/**/*.{ts,mts}"],
    ignores: ["src/redis/ioredis.ts"],
    rules: { "@typescript-eslint/no-restricted-imports": ["error", { paths: [IOREDIS] }] },
  },
  { files: PURE, rules: { "@typescript-eslint/no-restricted-imports": ["error", { paths: [IOREDIS, ...IO] }] } },
);
