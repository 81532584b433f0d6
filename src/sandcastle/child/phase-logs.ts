// Sandcastle writes a log per phase (its status lines plus the agent's text, verbatim: secret values
// included, raw and encoded). The child points it at 0600 files in a 0700 directory inside the run's
// own directory (tmpfs, removed whole by the worker when the run ends, swept when a run is lost), and
// removes them itself on every exit path. Nothing of it is published: the session log holds the
// agent's lines, redacted.
import { mkdirSync, rmSync, writeFileSync } from "node:fs";
import { basename, join } from "node:path";
import type { EventOrigin } from "./events.js";

export const PHASE_LOG_DIR = "sandcastle-logs";

export class PhaseLogs {
  private readonly dir: string;
  /** How Sandcastle names the directory in what it prints (a path relative to the worktree). */
  private readonly shownAs: string;

  constructor(runDir: string) {
    this.dir = join(runDir, PHASE_LOG_DIR);
    this.shownAs = join(basename(runDir), PHASE_LOG_DIR);
    mkdirSync(this.dir, { mode: 0o700 });
  }

  /** Sandcastle prints `tail -f <log>`: a path inside the run's private directory, of no use to a reader. */
  mentionsRawLog(line: string): boolean {
    return line.includes(this.shownAs);
  }

  /** Where Sandcastle writes this phase's log: created 0600 first (Sandcastle's appends keep the mode). */
  rawPath(origin: EventOrigin): string {
    const suffix = origin.implementer !== undefined ? `-${origin.implementer}` : "";
    const path = join(this.dir, `${origin.phase}${suffix}.log`);
    writeFileSync(path, "", { flag: "a", mode: 0o600 });
    return path;
  }

  /** Exit path: the logs go with the run. */
  dispose(): void {
    rmSync(this.dir, { recursive: true, force: true });
  }
}
