// A spare child (`run --config-on-stdin`, child-spare.ts) waits, loaded, for its run: the first line of its stdin names
// the run's config file and working directory (SpareHandoff). The pipe closing first means the worker let it go.
import { SpareHandoff } from "../contract.js";

export interface Handoff {
  readonly configPath: string;
  /** Set when the line could not be used: the run then fails invalid_payload naming why. */
  readonly problem?: string;
}

/** Resolves once the run is handed over (after `preload` settles), or null when stdin ends first. */
export async function awaitHandoff(preload: Promise<unknown>): Promise<Handoff | null> {
  await preload.catch(() => {}); // a library that cannot load fails the run where the run imports it
  const line = await firstLine();
  if (line === null) return null;
  let parsed: SpareHandoff;
  try {
    parsed = SpareHandoff.parse(JSON.parse(line));
  } catch {
    return { configPath: "", problem: "the worker's hand-over line is not {config, cwd}" };
  }
  try {
    process.chdir(parsed.cwd);
  } catch (error) {
    return { configPath: parsed.config, problem: `cannot work in repo_workdir ${parsed.cwd} (${(error as NodeJS.ErrnoException).code ?? "error"})` };
  }
  return { configPath: parsed.config };
}

/** The first line of stdin, read without taking more than it (the rest of the pipe is the stdin watchdog's). */
function firstLine(): Promise<string | null> {
  return new Promise((resolve) => {
    let text = "";
    const stdin = process.stdin;
    const done = (value: string | null) => {
      stdin.off("data", onData);
      stdin.off("end", onEnd);
      stdin.off("error", onEnd);
      stdin.pause();
      resolve(value);
    };
    const onData = (chunk: Buffer) => {
      text += chunk.toString("utf8");
      const newline = text.indexOf("\n");
      if (newline !== -1) done(text.slice(0, newline));
    };
    const onEnd = () => done(null);
    stdin.on("data", onData);
    stdin.once("end", onEnd);
    stdin.once("error", onEnd);
  });
}
