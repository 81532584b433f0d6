// Sandcastle writes a log per phase (its status lines plus the agent's text, verbatim). The child
// points it at a private temp dir (0700) and, when the phase ends, publishes a scrubbed copy (0600)
// as <repo_workdir>/.sandcastle/logs/<run_id>-<phase>[-<implementer>].log, so no secret value from
// config.env is left on disk by the child. The temp dir is removed on every exit path.
import { chmodSync, mkdirSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import type { EventOrigin } from "./events.js";
import type { SecretScrubber } from "./secret-scrubber.js";

export class PhaseLogs {
  private readonly rawDir: string;
  private readonly finalDir: string;
  private readonly id: string;
  private readonly open = new Set<string>();

  constructor(
    runId: string,
    repo: string,
    private readonly scrubber: SecretScrubber,
  ) {
    this.id = runId.replace(/[^A-Za-z0-9._-]/g, "_").slice(0, 100);
    this.rawDir = mkdtempSync(join(tmpdir(), `scq-logs-${this.id.slice(0, 40)}-`));
    chmodSync(this.rawDir, 0o700);
    this.finalDir = join(repo, ".sandcastle", "logs");
  }

  private fileName(origin: EventOrigin): string {
    const suffix = origin.implementer !== undefined ? `-${origin.implementer}` : "";
    return `${this.id}-${origin.phase}${suffix}.log`;
  }

  /** Sandcastle prints `tail -f <raw log>`: a path that is gone when the phase ends. */
  mentionsRawLog(line: string): boolean {
    return line.includes(this.rawDirName);
  }

  private get rawDirName(): string {
    return this.rawDir.slice(this.rawDir.lastIndexOf("/") + 1);
  }

  /** Where Sandcastle writes this phase's raw log. */
  rawPath(origin: EventOrigin): string {
    const name = this.fileName(origin);
    this.open.add(name);
    return join(this.rawDir, name);
  }

  /** Publishes the scrubbed copy of one phase's log (appending, as Sandcastle does on reruns). */
  publish(origin: EventOrigin): void {
    this.publishName(this.fileName(origin));
  }

  private publishName(name: string): void {
    if (!this.open.delete(name)) return;
    try {
      const raw = readFileSync(join(this.rawDir, name), "utf8");
      mkdirSync(this.finalDir, { recursive: true });
      writeFileSync(join(this.finalDir, name), this.scrubber.scrub(raw), { flag: "a", mode: 0o600 });
    } catch {
      // no log written (the phase never started) or the repo dir is gone
    }
    rmSync(join(this.rawDir, name), { force: true });
  }

  /** Exit path: publish what is left, then remove the temp dir. */
  dispose(): void {
    for (const name of [...this.open]) this.publishName(name);
    rmSync(this.rawDir, { recursive: true, force: true });
  }
}
