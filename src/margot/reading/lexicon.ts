// The word lists the reading of a Margot text is built from. Data only, no logic: a word added
// here changes what the reading notices, and the labelled sets say whether that helped.


/** Base forms of verbs that change code or data. */
export const ACTION_VERBS = new Set([
  "acknowledge", "add", "point", "adopt", "apply", "backfill", "batch", "block", "build", "point", "bump", "cache", "call", "cap",
  "change", "clean", "clear", "compress", "configure", "consolidate", "convert", "create", "debounce", "dedupe",
  "deduplicate", "defer", "delete", "deploy", "deprecate", "destroy", "disable", "drop", "enable", "encrypt",
  "enforce", "ensure", "erase", "escape", "exclude", "expire", "extract", "filter", "fix", "flush", "force",
  "generate", "guard", "handle", "harden", "hash", "hide", "implement", "include", "increase", "index", "inline",
  "install", "instrument", "introduce", "invalidate", "limit", "lock", "log", "lower", "make", "memoize",
  "merge", "migrate", "move", "paginate", "pass", "patch", "persist", "pin", "prefetch", "purge", "raise",
  "rate-limit", "rebuild", "redeploy", "reduce", "refactor", "refresh", "regenerate", "remove", "rename",
  "replace", "require", "reset", "resize", "restrict", "retry", "return", "revert", "rewrite", "rework",
  "rotate", "sanitize", "sanitise", "schedule", "scope", "send", "serve", "set", "shorten", "sign", "split",
  "stop", "store", "stream", "strip", "switch", "throttle", "tighten", "track", "trim", "truncate",
  "uninstall", "unpin", "update", "upgrade", "use", "validate", "verify", "wipe", "wrap", "write",
  "redact", "mask", "scrub", "swap", "substitute", "offload", "parallelize", "parallelise", "precompute",
  "denormalize", "normalize", "normalise", "partition", "decouple", "isolate", "gate", "allowlist", "blocklist",
  "adjust", "decrease", "extend", "expand", "attach", "detach", "route", "proxy", "forward", "redirect", "emit",
  "notify", "sync", "reindex", "archive", "retire", "sunset", "decommission", "port", "reroute", "bound",
  "parameterize", "parameterise", "decrypt", "authenticate", "authorize", "authorise", "protect", "coalesce",
  "preload", "lazy-load", "code-split", "minify", "optimize", "optimise", "tune", "cut", "shrink", "downgrade",
  "hotfix", "backport", "relocate", "combine", "unify", "standardize", "standardise", "prune", "evict", "reload",
  "restart", "provision", "document", "test", "cover", "trace", "catch", "transform", "simplify", "separate",
  "repair", "correct", "resolve", "address", "mitigate", "plug", "relax", "permit", "deny", "reject", "accept",
  "respond", "propagate", "expose", "revoke", "reissue", "chunk", "queue", "seed", "rollback", "roll",
  "release", "ship", "upload", "download", "import", "export", "debounce", "re-enable", "reconfigure",
]);

/** Action verbs that are also common nouns at the start of a sentence ("Cache hit rate is …"). */
export const NOUN_LIKE_VERBS = new Set([
  "batch", "block", "build", "cache", "call", "cap", "change", "drop", "filter", "hash", "index", "limit", "lock",
  "log", "patch", "return", "schedule", "scope", "set", "split", "stream", "track", "update", "use", "write",
  "merge", "reset", "stop", "switch", "test", "document", "cover", "trace", "catch", "address", "release",
  "ship", "queue", "seed", "sync", "export", "import", "upload", "download", "archive", "proxy", "route", "port",
  "chunk", "plug", "gate", "bound", "roll", "cut", "correct", "forward", "accept", "reject", "expose", "emit",
]);

/** Verbs that ask for more research rather than a change. */
export const RESEARCH_VERBS = new Set([
  "investigate", "research", "explore", "evaluate", "assess", "analyze", "analyse", "study", "benchmark",
  "compare", "review", "look", "dig", "audit", "measure", "survey",
]);

/** Verbs that put a decision off. */
export const DEFERRAL_VERBS = new Set(["revisit", "reconsider", "wait", "watch", "monitor", "keep", "hold", "think"]);

export const IRREGULAR_PARTICIPLES: Record<string, string> = {
  built: "build", written: "write", rewritten: "rewrite", set: "set", split: "split", made: "make", sent: "send",
  kept: "keep", run: "run", reset: "reset", hidden: "hide", cut: "cut", done: "do",
};

export const SKIPPABLE_ADVERBS = new Set([
  "also", "definitely", "really", "now", "immediately", "urgently", "first", "then", "still", "just", "quickly",
  "soon", "either", "both", "additionally", "instead", "simply", "explicitly", "additionally", "actually",
  "promptly", "therefore", "clearly", "always",
]);

export const STRONG_SUBJECTS = /\b(?:we|you|i|team|engineering|engineers|developers|devs|someone|restoreassist)\b/i;

/** Pattern alternatives, each starting with a letter (the reading groups them by it). */
export const SURFACE_NOUNS = [
  "webhooks?", "handlers?", "endpoints?", "routes?", "apis?", "tables?", "columns?", "indexes", "index",
  "migrations?", "functions?", "modules?", "components?", "pages?", "screens?", "views?", "jobs?", "workers?",
  "queues?", "cron", "middleware", "code ?paths?", "flows?", "services?", "clients?", "sdks?", "schemas?",
  "buckets?", "folders?", "policy", "policies", "cookies?", "headers?", "queries", "query", "triggers?",
  "hooks?", "integrations?", "pipelines?", "config", "configuration", "settings?", "forms?", "buttons?",
  "templates?", "scripts?", "parsers?", "controllers?", "models?", "resolvers?", "bundles?", "builds?",
  "workflows?", "checks?", "loops?", "urls?", "secrets?", "keys?", "branch(?:es)?", "repo(?:sitory)?",
  "database", "db", "checkout", "portal", "dashboard", "uploader", "sessions?", "tokens?", "env(?:ironment)? vars?",
  "feature flags?", "actions?", "library", "packages?", "dependency", "dependencies", "presets?", "listeners?",
  "subscriptions?", "entitlements?", "gallery", "galleries", "cache",
].join("|");

export const STOPWORD_MODIFIERS = new Set([
  "the", "a", "an", "this", "that", "these", "those", "our", "their", "its", "his", "her", "my", "your", "every",
  "each", "all", "any", "some", "no", "one", "new", "old", "same", "other", "which", "whose", "of", "to", "in",
  "on", "for", "and", "or", "with", "by", "from", "at", "is", "are", "was", "be", "it", "we", "you", "they",
]);

/** Proper nouns frameworks use for themselves ("Next.js") are not file names. */
export const FRAMEWORK_DOT_JS = /^(?:next|node|nuxt|vue|react|express|three|chart|d3|ember|backbone|angular|deno|bun|socket|solid|svelte)\.js$/i;

export const FUNCTION_WORDS = new Set([
  "the", "a", "an", "to", "of", "and", "or", "in", "on", "for", "with", "is", "are", "was", "were", "be", "been",
  "we", "it", "this", "that", "our", "from", "by", "as", "at", "not", "no", "has", "have", "had", "should",
  "must", "can", "will", "would", "could", "may", "might", "but", "if", "so", "than", "then", "there", "their",
  "they", "you", "which", "what", "who", "when", "how", "all", "any", "its", "into", "about", "after", "before",
  "per", "over", "under", "because", "since", "does", "do", "did", "also", "only", "more", "most", "some",
]);
