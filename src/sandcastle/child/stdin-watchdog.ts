// The worker keeps a pipe open to the child's stdin; that pipe closing means the worker is gone.
// Armed only when stdin is a pipe or socket: a child started by hand with stdin on a TTY or
// /dev/null must not take EOF for a dead worker.
import { fstatSync } from "node:fs";

export function stdinIsPipe(): boolean {
  try {
    const stat = fstatSync(0);
    return stat.isFIFO() || stat.isSocket();
  } catch {
    return false;
  }
}

/** Calls `onClosed` once when stdin reaches EOF or errors. Returns whether the watchdog was armed. */
export function watchStdin(onClosed: () => void): boolean {
  if (!stdinIsPipe()) return false;
  let fired = false;
  const fire = () => {
    if (fired) return;
    fired = true;
    onClosed();
  };
  const stdin = process.stdin;
  stdin.on("data", () => {}); // whatever the worker writes is ignored; reading keeps EOF observable
  stdin.on("end", fire);
  stdin.on("close", fire);
  stdin.on("error", fire);
  // A spare read its hand-over line and paused the stream (spare-handoff.ts): a paused stream would never see EOF.
  stdin.resume();
  return true;
}

/** Stops watching so a normal exit is not held up by the open pipe. */
export function releaseStdin(): void {
  try {
    process.stdin.removeAllListeners();
    process.stdin.pause();
    process.stdin.unref?.();
  } catch {
    // nothing to release
  }
}
