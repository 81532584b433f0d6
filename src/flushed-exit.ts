// Ending a process with its output delivered. process.exit() drops whatever a pipe has not taken yet
// (a reader slower than the writer leaves bytes queued in the process), so `cmd | tail -1` would read a
// cut line: every exit goes through here.
import type { Writable } from "node:stream";

/** Ends `stream` and resolves once everything written to it has been handed to the OS (or it failed). */
export function flushed(stream: Writable): Promise<void> {
  if (stream.writableFinished || stream.destroyed) return Promise.resolve();
  return new Promise((resolve) => {
    const done = () => resolve();
    stream.once("error", done);
    stream.once("close", done);
    // end() writes nothing itself: a wrapped `write` (the child's printer) is not called again.
    stream.end(done);
  });
}

/** Sets the exit code, lets stdout and stderr drain, then exits (nothing is written after this). */
export async function exitWhenFlushed(code: number): Promise<never> {
  process.exitCode = code;
  await Promise.all([flushed(process.stdout), flushed(process.stderr)]);
  // Handles another part left open (a library's timer, a socket) must not keep a finished command alive.
  process.exit(code);
}
