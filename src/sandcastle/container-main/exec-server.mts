// The exec channel's server (ADR 0049), one role of a run container's main process (main.mts). It connects out to
// the socket the child listens on (mounted from the run's directory; the child takes that first connection and no
// other) and runs each exec the child sends: its argv in a process group of its own, as the container's user (the
// server is that user), in the cwd asked (else the container's workdir), with the env `podman exec` would give;
// stdout and stderr go back as they come, then its exit. A kill frame SIGKILLs the exec's process group; the channel
// closing kills every exec's group, and ends the server (the container goes with it); an end frame kills every
// process of the container first and says so, so the host knows nothing of the agent's runs any more (ADR 0051).
// Plain Node, no import of the project.
import { spawn, type ChildProcess } from "node:child_process";
import { existsSync } from "node:fs";
import { connect } from "node:net";
import type { Readable } from "node:stream";
import { dataFrames, encodeFrame, FRAME, FrameDecoder, jsonFrame, type Frame } from "./exec-frames.mjs";

/**
 * Once an exec's process has exited, output that stops coming for this long is not waited for any more: as with
 * `podman exec`, a process it left in the background holding its stdout does not hold up its end.
 */
const QUIET_AFTER_EXIT_MS = 100;

interface OpenRequest {
  readonly argv: [string, ...string[]];
  readonly cwd?: string;
  readonly stdin: boolean;
}

interface RunningExec {
  readonly child: ChildProcess;
  readonly pgid: number;
  /** Output streams not yet closed. */
  open: number;
  exit?: { code: number | null; signal: NodeJS.Signals | null };
  lastOutput: number;
  quiet?: NodeJS.Timeout;
}

function openRequest(payload: Buffer): OpenRequest | undefined {
  try {
    const value = JSON.parse(payload.toString("utf8")) as { argv?: unknown; cwd?: unknown; stdin?: unknown };
    const argv = value.argv;
    if (!Array.isArray(argv) || argv.length === 0 || !argv.every((a): a is string => typeof a === "string")) return undefined;
    if (value.cwd !== undefined && typeof value.cwd !== "string") return undefined;
    return { argv: argv as [string, ...string[]], ...(typeof value.cwd === "string" ? { cwd: value.cwd } : {}), stdin: value.stdin === true };
  } catch {
    return undefined;
  }
}

/** `podman exec` gives a command the container's env less HOSTNAME: so does the channel. */
function execEnv(): NodeJS.ProcessEnv {
  const env = { ...process.env };
  delete env.HOSTNAME;
  return env;
}

function killGroup(pgid: number): void {
  try {
    process.kill(-pgid, "SIGKILL");
  } catch {
    // the group is gone already
  }
}

/** A deadline frame's payload: a whole number of seconds from now, at least one. */
function deadlineSeconds(payload: Buffer): number | undefined {
  try {
    const seconds = (JSON.parse(payload.toString("utf8")) as { seconds?: unknown }).seconds;
    return typeof seconds === "number" && Number.isInteger(seconds) && seconds >= 1 ? seconds : undefined;
  } catch {
    return undefined;
  }
}

/**
 * Connects to `socketPath` and serves the execs sent on it. `onEnd` runs once the channel the host took (it said
 * hello) has closed and every exec of it is killed; a connection refused or dropped before that serves nothing.
 * `onDeadline` moves the container's end when the host sends a deadline.
 */
export function serveExecs(socketPath: string, onEnd: () => void, onDeadline: (seconds: number) => void): void {
  const socket = connect(socketPath);
  const decoder = new FrameDecoder();
  const execs = new Map<number, RunningExec>();
  const outputs = new Set<Readable>();
  const env = execEnv();
  let congested = false;
  let greeted = false;

  // The host is slower than a command's output at times (a bundle into a file): outputs wait for the socket to drain.
  const send = (frame: Buffer): void => {
    if (!socket.write(frame) && !congested) {
      congested = true;
      for (const output of outputs) output.pause();
    }
  };
  socket.on("drain", () => {
    congested = false;
    for (const output of outputs) output.resume();
  });

  const finish = (id: number, exec: RunningExec): void => {
    if (exec.exit === undefined || execs.get(id) !== exec) return;
    if (exec.open === 0) {
      clearTimeout(exec.quiet);
      execs.delete(id);
      send(jsonFrame(FRAME.exit, id, exec.exit));
      return;
    }
    if (exec.quiet !== undefined) return;
    const check = (): void => {
      if (congested || Date.now() - exec.lastOutput < QUIET_AFTER_EXIT_MS) {
        exec.quiet = setTimeout(check, QUIET_AFTER_EXIT_MS);
        return;
      }
      exec.child.stdout?.destroy();
      exec.child.stderr?.destroy();
    };
    exec.quiet = setTimeout(check, QUIET_AFTER_EXIT_MS);
  };

  const start = (id: number, request: OpenRequest): void => {
    if (request.cwd !== undefined && !existsSync(request.cwd)) {
      send(jsonFrame(FRAME.started, id, { error: `chdir to cwd (${JSON.stringify(request.cwd)}) failed: no such file or directory` }));
      return;
    }
    let child: ChildProcess;
    try {
      const [file, ...args] = request.argv;
      child = spawn(file, args, { cwd: request.cwd, env, detached: true, stdio: [request.stdin ? "pipe" : "ignore", "pipe", "pipe"] });
    } catch (error) {
      send(jsonFrame(FRAME.started, id, { error: (error as Error).message }));
      return;
    }
    const pid = child.pid;
    if (pid === undefined) {
      child.once("error", (error) => send(jsonFrame(FRAME.started, id, { error: error.message })));
      return;
    }
    child.on("error", () => {});
    // A command that does not read its input closes the pipe: not an error.
    child.stdin?.on("error", () => {});
    const exec: RunningExec = { child, pgid: pid, open: 2, lastOutput: Date.now() };
    execs.set(id, exec);
    send(jsonFrame(FRAME.started, id, { pid }));
    for (const [stream, type] of [
      [child.stdout!, FRAME.stdout],
      [child.stderr!, FRAME.stderr],
    ] as const) {
      outputs.add(stream);
      if (congested) stream.pause();
      stream.on("data", (chunk: Buffer) => {
        exec.lastOutput = Date.now();
        for (const frame of dataFrames(type, id, chunk)) send(frame);
      });
      stream.once("close", () => {
        outputs.delete(stream);
        exec.open -= 1;
        finish(id, exec);
      });
    }
    child.once("exit", (code, signal) => {
      exec.exit = { code, signal };
      exec.lastOutput = Date.now();
      finish(id, exec);
    });
  };

  const onFrame = (frame: Frame): void => {
    switch (frame.type) {
      case FRAME.hello:
        greeted = true;
        return;
      case FRAME.open: {
        const request = openRequest(frame.payload);
        if (request === undefined || execs.has(frame.id)) send(jsonFrame(FRAME.started, frame.id, { error: "not an exec request" }));
        else start(frame.id, request);
        return;
      }
      case FRAME.stdin:
        execs.get(frame.id)?.child.stdin?.write(frame.payload);
        return;
      case FRAME.stdinEnd:
        execs.get(frame.id)?.child.stdin?.end();
        return;
      case FRAME.kill: {
        const exec = execs.get(frame.id);
        if (exec !== undefined) killGroup(exec.pgid);
        return;
      }
      case FRAME.end:
        endContainer();
        return;
      case FRAME.deadline: {
        const seconds = deadlineSeconds(frame.payload);
        if (seconds !== undefined) onDeadline(seconds);
        return;
      }
    }
  };

  // Every process of the container is the agent's user's, as this one is: kill(-1) reaches them all but init and
  // this server, so once `ended` is sent nothing of the agent's runs any more; then the server exits, and the container.
  const endContainer = (): void => {
    for (const exec of execs.values()) killGroup(exec.pgid);
    execs.clear();
    try {
      process.kill(-1, "SIGKILL");
    } catch {
      // ESRCH: there was nothing else to kill
    }
    socket.end(encodeFrame(FRAME.ended, 0), () => onEnd());
  };

  socket.on("data", (chunk: Buffer) => {
    let frames: Frame[];
    try {
      frames = decoder.push(chunk);
    } catch {
      socket.destroy();
      return;
    }
    for (const frame of frames) onFrame(frame);
  });
  socket.on("error", (error) => {
    if (!greeted) process.stderr.write(`exec server: ${socketPath}: ${error.message} (serving no execs)\n`);
  });
  socket.on("close", () => {
    for (const exec of execs.values()) killGroup(exec.pgid);
    execs.clear();
    if (greeted) onEnd();
  });
}
