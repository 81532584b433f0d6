// One shutdown registry per process: teardowns run in reverse order of registration,
// each bounded, and one failing does not block the rest.
import { exitWhenFlushed } from "./flushed-exit.js";
import type { Logger } from "./log.js";

/** Read at load, before anything slow: a channel its parent closed early is null by the time the service listens. */
const SPAWNED_WITH_CHANNEL = process.channel != null;

type Teardown = { name: string; run: () => Promise<void> | void; timeoutMs: number };

/** A teardown that hangs (Redis gone, a peer not answering) must not hold the process forever. */
const DEFAULT_TEARDOWN_MS = 10_000;

export class Shutdown {
  private readonly teardowns: Teardown[] = [];
  private running: Promise<void> | null = null;
  /** Synchronous last resorts for a second signal (e.g. SIGTERM to an owned redis-server). */
  private readonly immediate: Array<() => void> = [];

  constructor(private readonly log: Logger) {}

  add(name: string, run: Teardown["run"], timeoutMs = DEFAULT_TEARDOWN_MS): void {
    this.teardowns.push({ name, run, timeoutMs });
  }

  onImmediateExit(fn: () => void): void {
    this.immediate.push(fn);
  }

  run(): Promise<void> {
    this.running ??= (async () => {
      for (const t of [...this.teardowns].reverse()) {
        try {
          let timer: NodeJS.Timeout | undefined;
          const timedOut = await Promise.race([
            Promise.resolve(t.run()).then(() => false),
            new Promise<boolean>((r) => {
              timer = setTimeout(() => r(true), t.timeoutMs);
            }),
          ]);
          clearTimeout(timer);
          if (timedOut) this.log.warn({ teardown: t.name, timeout_ms: t.timeoutMs }, "teardown did not finish in time; going on");
        } catch (err) {
          // Best-effort: one teardown failing must not block the others.
          this.log.error({ err, teardown: t.name }, "teardown failed");
        }
      }
    })();
    return this.running;
  }

  /** First SIGINT/SIGTERM: graceful teardown then exit 0. Second: exit at once. */
  installSignalHandlers(exitCode = 0): void {
    let signals = 0;
    const handler = (signal: NodeJS.Signals | "parent-exited") => {
      signals += 1;
      if (signals > 1) {
        this.log.warn({ signal }, "second signal: exiting now");
        for (const fn of this.immediate) {
          try {
            fn();
          } catch {
            // exiting anyway
          }
        }
        // Forced on purpose: a second signal must not wait on a stdout pipe nobody reads.
        process.exit(130);
      }
      this.log.info({ signal }, "shutting down");
      void this.run().then(() => exitWhenFlushed(exitCode));
    };
    process.on("SIGINT", handler);
    process.on("SIGTERM", handler);
    // A service outlives whatever launched it (a shell that exits after `nohup … &` or `setsid`, a terminal
    // closed under nohup). Only a process this project spawned with an IPC channel — the test helpers do, so
    // that a test run that dies leaves no service behind — stops when that parent goes: the channel closes.
    if (SPAWNED_WITH_CHANNEL) {
      process.channel?.unref();
      process.once("disconnect", () => handler("parent-exited"));
      // A parent that died while the service was starting (its Redis, its workers) closed the channel before anyone listened.
      if (!process.connected) handler("parent-exited");
    }
  }
}
