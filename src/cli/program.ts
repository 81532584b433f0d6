// sandcastle-queue: the CLI of docs/contracts.md, loaded by main.ts once this Node can run it. Each command opens
// what it needs, and every error ends as one clear line.
import { Command, InvalidArgumentError } from "commander";
import { ConfigError } from "../config.js";
import { AppError } from "../errors.js";
import { exitWhenFlushed } from "../flushed-exit.js";
import { auditVerifyCommand } from "./commands/audit.js";
import { cancelCommand } from "./commands/cancel.js";
import { classifyCommand } from "./commands/classify.js";
import { draftsListCommand, draftsReactCommand, draftsShowCommand } from "./commands/drafts.js";
import { enqueueCommand } from "./commands/enqueue.js";
import { healthCommand } from "./commands/health.js";
import { killSwitchCommand } from "./commands/killswitch.js";
import { logsCommand } from "./commands/logs.js";
import { redactCommand } from "./commands/redact.js";
import { refuseWithoutTerminal, sandboxListCommand, sandboxOpenCommand, sandboxPinCommand } from "./commands/sandbox.js";
import { statusCommand } from "./commands/status.js";
import { PACKAGE } from "./package-info.js";
import { openRuntime, type Runtime } from "./runtime.js";

/** One-shot command: open a client runtime, run, tear down, exit with its code once its output is delivered. */
function oneShot(action: (rt: Runtime, ...args: any[]) => Promise<number>) {
  return async (...args: unknown[]) => {
    const rt = await openRuntime("client");
    let code = 1;
    try {
      code = await action(rt, ...args);
    } finally {
      await rt.shutdown.run();
    }
    await exitWhenFlushed(code);
  };
}

function service(parts: { workers: boolean; http: boolean }) {
  return async () => {
    // Loaded here: the HTTP side (Bull Board, express, prom-client) costs one-shot commands a second to import.
    const { serviceCommand } = await import("./commands/service.js");
    const rt = await openRuntime("service");
    try {
      await serviceCommand(rt, parts);
    } catch (err) {
      await rt.shutdown.run();
      throw err;
    }
  };
}

const positiveNumber = (value: string): number => {
  const n = Number(value);
  if (!Number.isFinite(n) || n <= 0) throw new InvalidArgumentError("takes a number of seconds > 0");
  return n;
};

export function buildProgram(): Command {
  const program = new Command("sandcastle-queue").description("Durable BullMQ queue in front of Sandcastle runs and Margot intents");
  // Usage errors (unknown command, missing argument) in the same one-line form as every other error.
  program.configureOutput({ outputError: (text, write) => write(`sandcastle-queue: ${text.replace(/^error: /, "").trim().replace(/\s*\n\s*/g, " ")}\n`) });
  program.showSuggestionAfterError(true);
  program.version(PACKAGE.version, "-V, --version", "print the version of sandcastle-queue");
  program.command("start").description("workers + HTTP (Bull Board); what `npm start` runs").action(service({ workers: true, http: true }));
  program.command("worker").description("workers only").action(service({ workers: true, http: false }));
  program.command("serve").description("HTTP only (Bull Board, /healthz, /readyz)").action(service({ workers: false, http: true }));
  program
    .command("health")
    .description("exit 0 when this host's workers are connected to every queue and its HTTP server answers /healthz")
    .option("--worker", "only the workers (what `worker` runs)")
    .option("--http", "only the HTTP server (what `serve` runs)")
    .action(async (opts: { worker?: boolean; http?: boolean }) => exitWhenFlushed(await healthCommand(opts)));
  program
    .command("enqueue <queue>")
    .description("enqueue a sandcastle-run request or a margot-intent completion")
    .option("--request <file>", "sandcastle-run: the SandcastleRunRequest JSON (- for stdin)")
    .option("--completion <file>", "margot-intent: the MargotResearchCompletion JSON (- for stdin)")
    .option("--wait", "block until the job ends; the last stdout line is the result JSON (progress on stderr when it is a terminal)")
    .option("--wait-timeout <seconds>", "give up waiting after this long: exit 2, the job still queued or running", positiveNumber)
    .action(oneShot((rt, queue: string, opts) => enqueueCommand(rt, queue, opts)));
  program
    .command("status")
    .description("per-queue counts, active runs, kill switch, Redis")
    .option("--json", "one JSON object")
    .action(oneShot((rt, opts) => statusCommand(rt, opts)));
  program
    .command("killswitch <action>")
    .description("on | off | status")
    .action(oneShot((rt, action: string) => killSwitchCommand(rt, action)));
  program
    .command("logs <sessionId>")
    .description("the session's log lines, as stored (already redacted)")
    .action(oneShot((rt, sessionId: string) => logsCommand(rt, sessionId)));
  program
    .command("redact")
    .description("stdin -> stdout through the log redactor")
    .action(async () => exitWhenFlushed(await redactCommand()));
  program
    .command("classify")
    .description("the Margot intent router on one research body: one JSON line")
    .option("--text-file <file>", "the research text (- for stdin)")
    .action(async (opts: { textFile?: string }) => exitWhenFlushed(await classifyCommand(opts)));
  const drafts = program.command("drafts").description("Margot drafts waiting for review (the local review channel)");
  drafts
    .command("list")
    .description("drafts, newest first: state, expiry or release time; recent review notices")
    .option("--json", "one JSON object")
    .action(oneShot((rt, opts) => draftsListCommand(rt, opts)));
  drafts
    .command("show <draftId>")
    .description("one draft with its ticket body")
    .option("--json", "one JSON object")
    .action(oneShot((rt, draftId: string, opts) => draftsShowCommand(rt, draftId, opts)));
  drafts
    .command("react <draftId> <reaction>")
    .description("approve | reject | defer a draft (a worker applies it; prints the outcome)")
    .option("--reason <text>", "why (with reject)")
    .option("--wait-timeout <seconds>", "give up waiting for a worker after this long (default 60)", positiveNumber)
    .action(oneShot((rt, draftId: string, reaction: string, opts) => draftsReactCommand(rt, draftId, reaction, opts)));
  program
    .command("audit")
    .description("the audit log (AUDIT_LOG_PATH)")
    .command("verify [paths...]")
    .description("check the hash chain (files oldest first; default AUDIT_LOG_PATH): exit 1 naming the first changed, removed or reordered row")
    .option("--json", "one JSON object")
    .action(async (paths: string[], opts: { json?: boolean }) => exitWhenFlushed(await auditVerifyCommand(paths, opts)));
  program
    .command("cancel <runId>")
    .description("terminate one run (or drop it if still waiting), from any process")
    .action(oneShot((rt, runId: string) => cancelCommand(rt, runId)));
  const sandbox = program.command("sandbox").description("retained run workspaces: list them, pin one, open a shell in one");
  sandbox
    .command("list")
    .description("retained runs: id, session, branch, size, OPEN / time left / pinned")
    .option("--json", "one JSON object")
    .action(oneShot((rt, opts) => sandboxListCommand(rt, opts)));
  sandbox
    .command("pin <runId>")
    .description("keep a retained run until now + SANDBOX_PIN_DAYS")
    .action(oneShot((rt, runId: string) => sandboxPinCommand(rt, runId)));
  const openSandbox = oneShot((rt, runId: string, opts) => sandboxOpenCommand(rt, runId, opts));
  sandbox
    .command("open <runId>")
    .description("a shell in the run's image and workspace: the run's isolation, no credentials")
    .option("--publish <port>", "PORT or HOST_PORT:PORT, published on 127.0.0.1 only")
    .option("--pin", "pin the run before the shell opens")
    .option("--allow <host>", "also let this session reach HOST (host, *.domain or IP, optional :port); repeatable", (host: string, all: string[] = []) => [
      ...all,
      host,
    ])
    .action(async (runId: string, opts: { publish?: string; pin?: boolean; allow?: string[] }) => {
      refuseWithoutTerminal();
      await openSandbox(runId, opts);
    });
  return program;
}

export async function main(): Promise<void> {
  try {
    await buildProgram().parseAsync(process.argv);
  } catch (err) {
    if (err instanceof ConfigError || err instanceof AppError) {
      process.stderr.write(`sandcastle-queue: ${err.message}\n`);
    } else {
      process.stderr.write(`sandcastle-queue: unexpected error: ${(err as Error)?.message ?? String(err)}\n`);
    }
    await exitWhenFlushed(1);
  }
}

