// A spare child (`run --config-on-stdin`, child-spare.ts) waits, loaded, for its run: a line of its stdin names the run's
// config file and working directory (SpareHandoff). A line before it may ask for a warm container (SpareWarmth, ADR 0053).
// The pipe closing first means the worker let it go.
import { SpareHandoff, SpareWarmth } from "../contract.js";

export interface Handoff {
  readonly configPath: string;
  /** The worker moved the spare's directories to the run's: its warm container may be the run's. */
  readonly warm: boolean;
  /** Set when the line could not be used: the run then fails invalid_payload naming why. */
  readonly problem?: string;
}

/**
 * Resolves once the run is handed over (after `preload` settles), or null when stdin ends first. A warm line is given
 * to `onWarm` as it comes; one that cannot be read is let go (the spare stays a plain one).
 */
export async function awaitHandoff(preload: Promise<unknown>, onWarm: (warm: SpareWarmth["warm"]) => void): Promise<Handoff | null> {
  await preload.catch(() => {}); // a library that cannot load fails the run where the run imports it
  const lines = new StdinLines();
  let line = await lines.next();
  const warm = line === null ? undefined : warmLine(line);
  if (warm !== undefined) {
    onWarm(warm);
    line = await lines.next();
  }
  if (line === null) return null;
  let parsed: SpareHandoff;
  try {
    parsed = SpareHandoff.parse(JSON.parse(line));
  } catch {
    return { configPath: "", warm: false, problem: "the worker's hand-over line is not {config, cwd}" };
  }
  try {
    process.chdir(parsed.cwd);
  } catch (error) {
    const code = (error as NodeJS.ErrnoException).code ?? "error";
    return { configPath: parsed.config, warm: false, problem: `cannot work in repo_workdir ${parsed.cwd} (${code})` };
  }
  return { configPath: parsed.config, warm: parsed.warm === true };
}

function warmLine(line: string): SpareWarmth["warm"] | undefined {
  try {
    return SpareWarmth.parse(JSON.parse(line)).warm;
  } catch {
    return undefined;
  }
}

/** Lines of stdin, read without taking more than the worker sends before the run (the rest of the pipe is the stdin watchdog's). */
class StdinLines {
  private text = "";
  private ended = false;

  next(): Promise<string | null> {
    const ready = this.take();
    if (ready !== undefined || this.ended) return Promise.resolve(ready ?? null);
    return new Promise((resolve) => {
      const stdin = process.stdin;
      const done = (value: string | null) => {
        stdin.off("data", onData);
        stdin.off("end", onEnd);
        stdin.off("error", onEnd);
        stdin.pause();
        resolve(value);
      };
      const onData = (chunk: Buffer) => {
        this.text += chunk.toString("utf8");
        const line = this.take();
        if (line !== undefined) done(line);
      };
      const onEnd = () => {
        this.ended = true;
        done(null);
      };
      stdin.on("data", onData);
      stdin.once("end", onEnd);
      stdin.once("error", onEnd);
      stdin.resume();
    });
  }

  private take(): string | undefined {
    const newline = this.text.indexOf("\n");
    if (newline === -1) return undefined;
    const line = this.text.slice(0, newline);
    this.text = this.text.slice(newline + 1);
    return line;
  }
}
