// The one reader of process.env: every setting of docs/contracts.md, validated once at start.
import { homedir } from "node:os";
import { isAbsolute, join, resolve } from "node:path";
import { z } from "zod";
import { DEFAULT_DESTRUCTIVE_VERBS, parseDestructiveVerbs } from "./margot/reading/destructive.js";
import { ConfigError } from "./errors.js";
import { parseClusterNodes, type ClusterNode } from "./redis/target.js";
import { ContainerNetwork, ImageRef } from "./sandcastle/contract.js";
import { DEFAULT_EGRESS_ALLOW, EgressList, type EgressRule } from "./sandcastle/egress/allowlist.js";
import { DEFAULT_SANDBOX_IMAGE } from "./sandcastle/containers/container-args.js";

export { ConfigError };

const flag = z.enum(["0", "1"], { error: 'takes "0" or "1"' });
const int = (min: number, max: number) =>
  z.coerce
    .number({ error: "takes a whole number" })
    .int("takes a whole number")
    .min(min, `takes a number ≥ ${min}`)
    .max(max, `takes a number ≤ ${max}`);
const seconds = (max: number) => int(1, max);
const optionalText = z.string().min(1, "must not be empty when set").optional();
const url = z.url({ error: "takes a URL such as http://127.0.0.1:8081" });
const logLevel = z.enum(["fatal", "error", "warn", "info", "debug", "trace", "silent"], { error: "takes fatal, error, warn, info, debug, trace or silent" });

const EnvSchema = z.object({
  REDIS_URL: z
    .string()
    .regex(/^(redis|rediss):\/\//, "takes a redis:// or rediss:// URL (or leave it unset for the embedded Redis)")
    .optional(),
  /** A Redis Cluster's seed nodes, host:port,host:port (instead of REDIS_URL). */
  REDIS_CLUSTER_NODES: z
    .string()
    .refine((v) => "nodes" in parseClusterNodes(v), "takes seed nodes as host:port,host:port (IPv6 as [::1]:7000)")
    .optional(),
  REDIS_CLUSTER_USERNAME: optionalText,
  REDIS_CLUSTER_PASSWORD: optionalText,
  REDIS_CLUSTER_TLS: flag.default("0"),
  /** Unset: the user's state directory (one service per user, wherever a command is started). */
  SCQ_DATA_DIR: z.string().min(1).optional(),
  /** What relative paths in settings are relative to; unset: SCQ_DATA_DIR. */
  SCQ_BASE_DIR: z.string().min(1).optional(),
  /** Hash tag keeps every key of a queue in one Redis Cluster slot. */
  SCQ_KEY_PREFIX: z
    .string()
    .regex(/^\{[A-Za-z0-9_-]+\}$/, "takes a hash-tagged prefix such as {scq}")
    .default("{scq}"),
  LOG_LEVEL: logLevel.default("info"),
  SCQ_SHUTDOWN_GRACE_SECONDS: seconds(3600).default(30),
  /** BullMQ job lock: renewed every half of it; a worker silent for this long has lost its jobs. */
  SCQ_LOCK_DURATION_MS: int(1000, 600_000).default(30_000),
  SCQ_STALLED_INTERVAL_MS: int(500, 600_000).default(30_000),

  TAO_SANDCASTLE_ENABLED: z.string().optional(),
  MAX_CONCURRENT_SANDCASTLE_RUNS: int(1, 64).default(3),
  /** Per session: the session log keeps its newest lines up to about this many MiB (Redis is memory, with noeviction). */
  SESSION_LOG_MAX_MB: int(1, 4096).default(16),
  KILL_SWITCH_FILE: optionalText,
  SANDCASTLE_BIN: optionalText,
  SANDCASTLE_CONFIG_DIR: optionalText,
  /** The container image of docker/podman runs when the request names none (scripts/build-sandbox-image.sh builds it). */
  SANDCASTLE_IMAGE: ImageRef.default(DEFAULT_SANDBOX_IMAGE),
  /** The binary run for sandbox docker and podman; unset: `docker` / `podman` on PATH. */
  SANDCASTLE_CONTAINER_CLI: optionalText,
  /** Where `custom:<name>` sandbox providers live (`<name>.js` / `<name>.mjs`). */
  SANDCASTLE_PROVIDERS_DIR: optionalText,
  SANDCASTLE_CONTAINER_MEMORY: z
    .string()
    .regex(/^[0-9]+[bkmg]?$/i, "takes a size such as 4g or 512m")
    .default("4g"),
  SANDCASTLE_CONTAINER_CPUS: z.coerce
    .number({ error: "takes a number such as 2 or 1.5" })
    .positive("takes a number > 0")
    .max(1024, "takes a number ≤ 1024")
    .default(2),
  SANDCASTLE_CONTAINER_PIDS: int(16, 1_000_000).default(1024),
  /** The run containers' network instead of the engine's bridge: a named network, or container:<name> (a model proxy's or gateway's namespace). */
  SANDCASTLE_CONTAINER_NETWORK: ContainerNetwork.optional(),
  /** Tokens a run may use unless its request says otherwise (input + output, cache reads and writes included); unset: no budget. */
  SANDCASTLE_TOKEN_BUDGET: int(1, Number.MAX_SAFE_INTEGER).optional(),
  /** An agent that prints nothing for this long is stopped (a model endpoint that does not answer, a command that hangs). */
  SANDCASTLE_AGENT_IDLE_SECONDS: seconds(24 * 3600).default(600),
  /** The hosts a run's containers may reach through the egress proxy (host, *.domain or IP, optional :port; comma list). */
  SANDCASTLE_EGRESS_ALLOW: EgressList.prefault(DEFAULT_EGRESS_ALLOW),
  /** The most a request's egress_allow may name; unset: SANDCASTLE_EGRESS_ALLOW. */
  SANDCASTLE_EGRESS_PERMIT: EgressList.optional(),
  /** Static name=address entries the egress proxy resolves before DNS (a gateway with no DNS name). */
  SANDCASTLE_EGRESS_HOSTS: z
    .string()
    .regex(
      /^\s*([A-Za-z0-9.-]+=[0-9A-Fa-f:.]+)(\s*,\s*[A-Za-z0-9.-]+=[0-9A-Fa-f:.]+)*\s*$/,
      "takes name=address entries, comma-separated (llm-gateway.internal=10.0.0.5)",
    )
    .optional(),
  /** "1": a request may ask for network "open" (the engine's bridge, no egress policy). */
  SANDCASTLE_EGRESS_OPEN: flag.default("0"),
  /** "1": a worker's spare child keeps a warm container shaped like its last container run (ADR 0053); "0": none. */
  SANDCASTLE_WARM_CONTAINER: flag.default("1"),
  AUDIT_LOG_PATH: z.string().min(1).default(".harness/swarm.jsonl"),
  MARGOT_LEDGER_PATH: z.string().min(1).default(".harness/swarm/margot_intents.jsonl"),
  /** Research follow-ups, one JSON line each, for Pi-CEO to start the new research. */
  MARGOT_FOLLOW_UP_PATH: z.string().min(1).default(".harness/swarm/margot_follow_ups.jsonl"),
  PROJECTS_CONFIG_PATH: z.string().min(1).default("config/harness/projects.json"),
  ENV_MANIFEST_DIR: z.string().min(1).default(".harness/env-manifests"),
  MARGOT_DESTRUCTIVE_VERBS: z.string().min(1).default(DEFAULT_DESTRUCTIVE_VERBS.join(",")),
  MARGOT_COMPLETE_PATH: optionalText,
  MARGOT_RATE_LIMIT_MAX: int(1, 1_000_000).default(5),
  MARGOT_RATE_WINDOW_SECONDS: seconds(30 * 86400).default(86400),
  MARGOT_DRAFT_EXPIRY_SECONDS: seconds(30 * 86400).default(86400),
  MARGOT_DEFER_SECONDS: seconds(30 * 86400).default(86400),
  MARGOT_SUPPRESS_SECONDS: seconds(365 * 86400).default(7 * 86400),
  /** How often the MARGOT_COMPLETE_PATH tailer looks for new lines. */
  MARGOT_COMPLETE_POLL_MS: int(20, 60_000).default(1000),
  /** margot-intent jobs one worker process runs at once (each holds its body, ≤ 1 MiB, while it runs). */
  MARGOT_CONCURRENCY: int(1, 1024).default(64),
  MARGOT_INTERNAL_HOSTS: z.string().default(""),
  MARGOT_CUSTOMER_NAMES: z.string().default(""),
  MARGOT_VENDOR_NAMES: z.string().default(""),

  HOST: z.string().min(1).default("127.0.0.1"),
  PORT: int(0, 65535).default(3000),
  SCQ_API_TOKEN: z.string().min(16, "must be at least 16 characters (it guards Bull Board and the API)").optional(),
  /** Read-only access (board, GET endpoints, logs, metrics); needs SCQ_API_TOKEN and must differ from it. */
  SCQ_VIEWER_TOKEN: z.string().min(16, "must be at least 16 characters").optional(),
  /** Host names the server answers to besides loopback ones (DNS-rebinding guard); `*` = any. */
  SCQ_ALLOWED_HOSTS: z
    .string()
    .regex(/^\s*(\*|[A-Za-z0-9.-]+(:\d+)?(\s*,\s*[A-Za-z0-9.-]+(:\d+)?)*)\s*$/, "takes a comma list of host names (queue.example.com,10.0.0.5) or *")
    .optional(),
  /** Live log readers (SSE) at once; each holds a Redis connection. */
  SCQ_SSE_MAX_CLIENTS: int(1, 10_000).default(32),
  /** How long a client may take to send one whole request (headers: at most 10 s of it); then 408 and the connection closes. */
  SCQ_HTTP_REQUEST_TIMEOUT_SECONDS: seconds(3600).default(30),
  SCQ_BOARD_READ_ONLY: flag.default("1"),
  /** The level of the HTTP access log's lines (one per request); "silent": none. */
  SCQ_ACCESS_LOG_LEVEL: logLevel.default("info"),

  TELEGRAM_BOT_TOKEN: optionalText,
  REVIEW_CHAT_ID: optionalText,
  TELEGRAM_API_BASE: url.default("https://api.telegram.org"),
  TELEGRAM_WEBHOOK_SECRET: z
    .string()
    .regex(/^[A-Za-z0-9_-]{1,256}$/, "takes 1-256 characters A-Z a-z 0-9 _ - (Telegram's rule)")
    .optional(),
  /** Only these Telegram user ids may react; unset = anyone in REVIEW_CHAT_ID. */
  TELEGRAM_REVIEWER_IDS: z
    .string()
    .regex(/^\s*\d{1,20}(\s*,\s*\d{1,20})*\s*$/, "takes a comma-separated list of numeric Telegram user ids")
    .optional(),
  LINEAR_API_KEY: optionalText,
  LINEAR_API_URL: url.default("https://api.linear.app/graphql"),
  /** The team issues are created in: its id, key (e.g. RA) or name. */
  LINEAR_TEAM_ID: optionalText,
  /** One Linear request longer than this is abandoned (and retried after a lookup, never blindly). */
  LINEAR_TIMEOUT_MS: int(100, 300_000).default(15_000),
  /** The local mode: approved drafts become issues (RA-LOCAL-1, …) in this JSONL file, not Linear. */
  LINEAR_LOCAL_FILE: optionalText,

  /** How long a finished run's workspace stays re-openable; 0 = off (nothing kept, and a worker's start removes what was). Fractions allowed (0.5 = 30 min). */
  SANDBOX_RETENTION_HOURS: z.coerce
    .number({ error: "takes a number of hours (0 = off)" })
    .min(0, "takes a number of hours ≥ 0 (0 = off)")
    .max(24 * 365, `takes a number of hours ≤ ${24 * 365}`)
    .default(24),
  SANDBOX_PIN_DAYS: int(1, 365).default(7),
  SANDBOX_IDLE_MINUTES: int(0, 24 * 60).default(30),
  RUNS_DIR: optionalText,
});

export type Env = z.infer<typeof EnvSchema>;

/**
 * The container engine's own variables, handed to every docker/podman the service runs (worker and child):
 * CONTAINERS_CONF is how a machine kind's podman settings reach it without touching /etc (README).
 */
export const ENGINE_ENV_NAMES = ["CONTAINERS_CONF", "CONTAINERS_STORAGE_CONF", "CONTAINER_HOST", "XDG_RUNTIME_DIR", "DOCKER_HOST", "DOCKER_CONTEXT"] as const;

/** Every variable the program reads (docker-compose's env file must be able to carry each one). */
export const ENV_VARIABLES = Object.keys(EnvSchema.shape) as ReadonlyArray<keyof Env>;

export interface Config extends Omit<Env, "SCQ_DATA_DIR" | "SCQ_BASE_DIR"> {
  /** Absolute: SCQ_DATA_DIR, or $XDG_STATE_HOME/sandcastle-queue (~/.local/state/sandcastle-queue). */
  readonly SCQ_DATA_DIR: string;
  /** Absolute: where relative paths of settings were resolved from. */
  readonly SCQ_BASE_DIR: string;
  /** True when SCQ_DATA_DIR was set (not the per-user default). */
  readonly dataDirExplicit: boolean;
  /** The user's list of live embedded Redis servers, whatever SCQ_DATA_DIR says. */
  readonly embeddedRegistryDir: string;
  /** Host names served besides loopback ones; "*" = any. */
  readonly allowedHosts: readonly string[] | "*";
  /** REDIS_CLUSTER_NODES and its credentials, parsed; null: one Redis (REDIS_URL or the embedded one). */
  readonly redisCluster: { readonly nodes: readonly ClusterNode[]; readonly username?: string; readonly password?: string; readonly tls: boolean } | null;
  /** Derived: TAO_SANDCASTLE_ENABLED === "1". */
  readonly sandcastleEnabled: boolean;
  readonly runsDir: string;
  readonly destructiveVerbs: readonly string[];
  readonly internalHosts: readonly string[];
  readonly customerNames: readonly string[];
  readonly vendorNames: readonly string[];
  readonly reviewerIds: readonly string[];
  /** Drafts go to Telegram when both TELEGRAM_BOT_TOKEN and REVIEW_CHAT_ID are set, else to the local channel. */
  readonly reviewChannel: "telegram" | "local";
  /** ENGINE_ENV_NAMES that are set. */
  readonly engineEnv: Readonly<Record<string, string>>;
  /** SANDCASTLE_EGRESS_PERMIT, else SANDCASTLE_EGRESS_ALLOW: the most a request's egress_allow may name. */
  readonly egressPermit: readonly EgressRule[];
  /** SANDCASTLE_EGRESS_HOSTS as lower-case name → address. */
  readonly egressHosts: Readonly<Record<string, string>>;
}

const csv = (value: string): string[] =>
  value
    .split(",")
    .map((s) => s.trim())
    .filter((s) => s.length > 0);

/** Empty strings count as unset, so `FOO=` in a .env file means "default". */
function withoutEmpty(env: NodeJS.ProcessEnv): Record<string, string> {
  const out: Record<string, string> = {};
  for (const [key, value] of Object.entries(env)) if (value !== undefined && value !== "") out[key] = value;
  return out;
}

/** The per-user state directory (XDG Base Directory spec): where the embedded Redis and run data live by default. */
export function defaultDataDir(env: NodeJS.ProcessEnv): string {
  const stateHome = env.XDG_STATE_HOME && isAbsolute(env.XDG_STATE_HOME) ? env.XDG_STATE_HOME : join(env.HOME || homedir(), ".local", "state");
  return join(stateHome, "sandcastle-queue");
}

/** Settings holding a path: relative ones are taken from SCQ_BASE_DIR, never from the working directory. */
const PATH_SETTINGS = [
  "AUDIT_LOG_PATH", "MARGOT_LEDGER_PATH", "MARGOT_FOLLOW_UP_PATH", "PROJECTS_CONFIG_PATH", "ENV_MANIFEST_DIR", "KILL_SWITCH_FILE", "MARGOT_COMPLETE_PATH",
  "RUNS_DIR", "SANDCASTLE_PROVIDERS_DIR", "LINEAR_LOCAL_FILE",
] as const;

function crossChecks(e: Env): string[] {
  const problems: string[] = [];
  if (e.SCQ_VIEWER_TOKEN !== undefined && e.SCQ_API_TOKEN === undefined) problems.push("SCQ_VIEWER_TOKEN: needs SCQ_API_TOKEN (the admin token) set too");
  if (e.SCQ_VIEWER_TOKEN !== undefined && e.SCQ_VIEWER_TOKEN === e.SCQ_API_TOKEN) problems.push("SCQ_VIEWER_TOKEN: must differ from SCQ_API_TOKEN");
  if (e.SCQ_ALLOWED_HOSTS !== undefined && e.SCQ_API_TOKEN === undefined)
    problems.push("SCQ_ALLOWED_HOSTS: needs SCQ_API_TOKEN (without a token only loopback host names are served)");
  if (e.REDIS_CLUSTER_NODES !== undefined && e.REDIS_URL !== undefined)
    problems.push("REDIS_CLUSTER_NODES: set either REDIS_URL (one Redis) or REDIS_CLUSTER_NODES (a Redis Cluster), not both");
  for (const name of ["REDIS_CLUSTER_USERNAME", "REDIS_CLUSTER_PASSWORD"] as const) {
    if (e[name] !== undefined && e.REDIS_CLUSTER_NODES === undefined)
      problems.push(`${name}: needs REDIS_CLUSTER_NODES set too (for REDIS_URL put credentials in the URL)`);
  }
  if (e.REDIS_CLUSTER_TLS === "1" && e.REDIS_CLUSTER_NODES === undefined) problems.push("REDIS_CLUSTER_TLS: needs REDIS_CLUSTER_NODES set too (for REDIS_URL use rediss://)");
  if (e.LINEAR_LOCAL_FILE !== undefined && e.LINEAR_API_KEY !== undefined) {
    problems.push("LINEAR_LOCAL_FILE: set either LINEAR_API_KEY (issues in Linear) or LINEAR_LOCAL_FILE (the local mode: issues in a file), not both");
  }
  return problems;
}

export function loadConfig(env: NodeJS.ProcessEnv = process.env): Config {
  const parsed = EnvSchema.safeParse(withoutEmpty(env));
  if (!parsed.success) {
    const problems = parsed.error.issues.map((issue) => {
      const name = String(issue.path[0] ?? "?");
      // Never echo the value: the variable may hold a secret.
      return `${name}: ${issue.message}`;
    });
    throw new ConfigError(problems);
  }
  const e = parsed.data;
  const clean = withoutEmpty(env);
  const engineEnv = Object.fromEntries(ENGINE_ENV_NAMES.flatMap((name) => (clean[name] !== undefined ? [[name, clean[name]]] : [])));
  const cross = crossChecks(e);
  if (cross.length > 0) throw new ConfigError(cross);
  const dataDir = e.SCQ_DATA_DIR !== undefined ? resolve(e.SCQ_DATA_DIR) : defaultDataDir(env);
  const baseDir = e.SCQ_BASE_DIR !== undefined ? resolve(e.SCQ_BASE_DIR) : dataDir;
  const paths: Partial<Record<(typeof PATH_SETTINGS)[number], string>> = {};
  for (const name of PATH_SETTINGS) {
    const value = e[name];
    if (value !== undefined) paths[name] = resolve(baseDir, value);
  }
  const hosts = e.SCQ_ALLOWED_HOSTS?.trim();
  return Object.freeze({
    ...e,
    ...paths,
    SCQ_DATA_DIR: dataDir,
    SCQ_BASE_DIR: baseDir,
    dataDirExplicit: e.SCQ_DATA_DIR !== undefined,
    embeddedRegistryDir: join(defaultDataDir(env), "instances"),
    allowedHosts: hosts === "*" ? "*" : csv(hosts ?? "").map((h) => h.toLowerCase()),
    redisCluster: clusterSettings(e),
    sandcastleEnabled: e.TAO_SANDCASTLE_ENABLED === "1",
    runsDir: paths.RUNS_DIR ?? join(dataDir, "runs"),
    egressPermit: e.SANDCASTLE_EGRESS_PERMIT ?? e.SANDCASTLE_EGRESS_ALLOW,
    egressHosts: Object.fromEntries(
      csv(e.SANDCASTLE_EGRESS_HOSTS ?? "")
        .map((entry) => entry.split("=", 2) as [string, string])
        .map(([name, address]) => [name.toLowerCase(), address]),
    ),
    destructiveVerbs: parseDestructiveVerbs(e.MARGOT_DESTRUCTIVE_VERBS),
    internalHosts: csv(e.MARGOT_INTERNAL_HOSTS),
    customerNames: csv(e.MARGOT_CUSTOMER_NAMES),
    vendorNames: csv(e.MARGOT_VENDOR_NAMES),
    reviewerIds: csv(e.TELEGRAM_REVIEWER_IDS ?? ""),
    reviewChannel: e.TELEGRAM_BOT_TOKEN !== undefined && e.REVIEW_CHAT_ID !== undefined ? "telegram" : "local",
    engineEnv,
  });
}

function clusterSettings(e: Env): Config["redisCluster"] {
  if (e.REDIS_CLUSTER_NODES === undefined) return null;
  const parsed = parseClusterNodes(e.REDIS_CLUSTER_NODES);
  if (!("nodes" in parsed)) return null;
  return {
    nodes: parsed.nodes,
    ...(e.REDIS_CLUSTER_USERNAME !== undefined ? { username: e.REDIS_CLUSTER_USERNAME } : {}),
    ...(e.REDIS_CLUSTER_PASSWORD !== undefined ? { password: e.REDIS_CLUSTER_PASSWORD } : {}),
    tls: e.REDIS_CLUSTER_TLS === "1",
  };
}

/** Names of config fields whose values are secrets: never logged, never stored. */
export const SECRET_SETTINGS = [
  "SCQ_API_TOKEN", "SCQ_VIEWER_TOKEN", "TELEGRAM_BOT_TOKEN", "TELEGRAM_WEBHOOK_SECRET", "LINEAR_API_KEY", "REDIS_URL", "REDIS_CLUSTER_PASSWORD",
] as const;
