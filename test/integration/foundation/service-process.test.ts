// The service as a process, through the built CLI: a second `start` whose port is taken is refused before its workers
// join, naming the live service and its URL; a service started from a shell that then exits (`nohup … &`, `setsid`)
// keeps running, one this project spawned (with an IPC channel, as the test helpers do) stops with its parent, and
// `npm start` stops on a SIGTERM to npm; a service's stderr is JSON log lines only.
import { execFile, spawn } from "node:child_process";
import { existsSync, readFileSync } from "node:fs";
import { createServer, type Server } from "node:net";
import { delimiter, dirname, join, resolve } from "node:path";
import { promisify } from "node:util";
import { afterEach, beforeEach, describe, expect, it } from "vitest";
import { processAlive, waitForExit } from "../../../src/redis/process-alive.js";
import { CLI, CliProcess, cliEnv, runCli, stopAllCli, waitFor } from "../../helpers/cli.js";
import { killEmbeddedServers } from "../../helpers/embedded-servers.js";
import { freePort } from "../../helpers/redis-server.js";
import { tempDir } from "../../helpers/scope.js";

const ROOT = resolve(import.meta.dirname, "../../..");
const run = promisify(execFile);

let dir: ReturnType<typeof tempDir>;
let dataDir: string;
let env: NodeJS.ProcessEnv;
/** Processes a test started outside CliProcess (through a shell): stopped by pid afterwards. */
const strays = new Set<number>();

beforeEach(() => {
  dir = tempDir("scqp");
  dataDir = join(dir.path, "d");
  env = cliEnv({ HOME: join(dir.path, "h"), SCQ_DATA_DIR: dataDir, LOG_LEVEL: "info", SCQ_SHUTDOWN_GRACE_SECONDS: "2" });
});
afterEach(async () => {
  for (const pid of strays) {
    if (processAlive(pid)) process.kill(pid, "SIGKILL");
    await waitForExit(pid, 5000);
  }
  strays.clear();
  await stopAllCli();
  killEmbeddedServers(dataDir);
  dir.remove();
});

/** JSON log lines of a service's stderr (a file or a string), parsed; fails on a line that is not JSON. */
function jsonLines(text: string): Array<{ pid: number; msg: string; signal?: string }> {
  return text
    .split("\n")
    .filter((l) => l.length > 0)
    .map((l) => {
      try {
        return JSON.parse(l) as { pid: number; msg: string; signal?: string };
      } catch {
        throw new Error(`not a JSON log line: ${l}`);
      }
    });
}

const logOf = (path: string) => (existsSync(path) ? readFileSync(path, "utf8") : "");

describe("a second start", () => {
  it("whose port the live service holds is refused first — one line naming that service's pid and URL — and its workers never start", async () => {
    const port = await freePort();
    const first = new CliProcess(["start"], { ...env, PORT: String(port) });
    await first.waitForOutput(/workers \+ http running/);
    const url = `http://127.0.0.1:${port}`;

    const second = await runCli(["start"], { ...env, PORT: String(port) });
    expect(second.code).toBe(1);
    const lines = second.stderr.split("\n").filter(Boolean);
    const refusal = lines.at(-1)!;
    expect(refusal).toMatch(
      new RegExp(
        `^sandcastle-queue: a sandcastle-queue service is already running here: pid ${first.pid} \\(workers \\+ http, since \\S+\\) at ${url.replace(/[.]/g, "\\.")}, on unix://${dataDir}/redis/redis\\.sock; ` +
          `use that one \\(\`sandcastle-queue status\` reaches it\\), or stop it first \\(Ctrl-C in its terminal, or kill ${first.pid}\\); a second HTTP server needs another PORT$`,
      ),
    );
    expect(second.stderr).not.toContain("EADDRINUSE");
    // Refused before the workers: no worker of the second process ever started (its JSON log says what it did).
    expect(jsonLines(lines.slice(0, -1).join("\n")).map((l) => l.msg)).not.toContain("workers started");
    expect(second.stdout).not.toMatch(/running on/);
    // The live service is untouched.
    expect((await fetch(`${url}/healthz`)).status).toBe(200);
    expect(first.child.exitCode).toBeNull();

    // Its stderr is JSON lines only, warnings included (runs disabled, no REVIEW_CHAT_ID), each with its own pid.
    const log = jsonLines(first.stderr);
    expect(log.map((l) => l.msg)).toEqual(
      expect.arrayContaining([
        "runs are disabled (TAO_SANDCASTLE_ENABLED is not 1): every sandcastle-run job ends skipped / sandcastle_disabled until it is set and the service restarted",
        "REVIEW_CHAT_ID is not set: the Telegram webhook answers 503 to every update",
      ]),
    );
    for (const l of log) expect(l.pid).toBe(first.pid);
    expect(await first.stop()).toBe(0);
  });

  it("whose port another program holds is refused naming PORT, not EADDRINUSE", async () => {
    const squatter: Server = createServer();
    await new Promise<void>((r) => squatter.listen(0, "127.0.0.1", r));
    const port = (squatter.address() as { port: number }).port;
    try {
      const res = await runCli(["start"], { ...env, PORT: String(port) });
      expect(res.code).toBe(1);
      expect(res.stderr.split("\n").filter(Boolean).at(-1)).toBe(
        `sandcastle-queue: cannot listen on 127.0.0.1:${port}: another program holds that port (no sandcastle-queue service of this Redis does); stop it, or set PORT (and HOST) to a free one`,
      );
    } finally {
      squatter.close();
    }
  });
});

describe("a service outlives its launcher", () => {
  /**
   * Starts `sandcastle-queue worker` in the background of `sh -c`, which stays until the worker is up and then exits
   * (as a terminal's shell does later): the worker's parent goes. Its pid, read from its JSON log.
   */
  async function fromShell(launch: string, log: string): Promise<number> {
    const script = `${launch} "$NODE" "$CLI" worker > "$LOG.out" 2> "$LOG" < /dev/null &
      i=0; until grep -q '"msg":"workers started"' "$LOG" 2>/dev/null || [ "$i" -ge 300 ]; do sleep 0.1; i=$((i + 1)); done`;
    await run("sh", ["-c", script], { env: { ...env, NODE: process.execPath, CLI, LOG: log }, timeout: 40_000 });
    await waitFor(() => logOf(log).includes('"msg":"workers started"'), 30_000, () => `the worker to start:\n${logOf(log)}`);
    const pid = jsonLines(logOf(log))[0]!.pid;
    strays.add(pid);
    return pid;
  }

  it.each([
    ["nohup … &", "nohup"],
    ["setsid", "setsid"],
  ])("a worker started with %s from a shell that exits keeps running; SIGTERM still stops it", async (_name, launch) => {
    const log = join(dir.path, "worker.log");
    const pid = await fromShell(launch, log);
    // Its launcher is gone (it waited for the worker, then exited). The old watch looked every 0.5 s: several looks
    // later the worker is still there, and has said nothing of stopping.
    await new Promise((r) => setTimeout(r, 2500));
    expect(processAlive(pid)).toBe(true);
    expect(logOf(log)).not.toMatch(/shutting down|parent-exited/);
    const status = await runCli(["status", "--json"], env);
    expect(status.code, status.stderr).toBe(0);
    process.kill(pid, "SIGTERM");
    expect(await waitForExit(pid, 20_000)).toBe(true);
    expect(jsonLines(logOf(log)).find((l) => l.msg === "shutting down")?.signal).toBe("SIGTERM");
  });

  it("a worker this project spawned (an IPC channel, as the test helpers open) stops when that parent exits", async () => {
    const log = join(dir.path, "worker.log");
    // A parent that spawns the worker with an IPC channel, waits until it is up, prints its pid and exits.
    const parent = `
      const { spawn } = require("node:child_process");
      const { openSync, readFileSync } = require("node:fs");
      const c = spawn(process.execPath, [process.env.CLI, "worker"], { stdio: ["ignore", "ignore", openSync(process.env.LOG, "a"), "ipc"] });
      c.channel.unref();
      const t = setInterval(() => {
        if (readFileSync(process.env.LOG, "utf8").includes('"msg":"workers started"')) { console.log(c.pid); process.exit(0); }
      }, 100);
    `;
    const { stdout } = await run(process.execPath, ["-e", parent], { env: { ...env, CLI, LOG: log }, timeout: 30_000 });
    const pid = Number(stdout.trim());
    strays.add(pid);
    expect(await waitForExit(pid, 20_000)).toBe(true);
    expect(jsonLines(logOf(log)).find((l) => l.msg === "shutting down")?.signal).toBe("parent-exited");
  });

  it("`npm start` stops when npm gets SIGTERM: its script execs the service, so npm's signal reaches it", async () => {
    const npm = spawn("npm", ["start", "--ignore-scripts", "--silent"], {
      cwd: ROOT,
      env: { ...env, PORT: "0", PATH: `${dirname(process.execPath)}${delimiter}${process.env.PATH ?? ""}` },
      stdio: ["ignore", "pipe", "pipe"],
    });
    let out = "";
    let err = "";
    npm.stdout.on("data", (d: Buffer) => (out += d.toString()));
    npm.stderr.on("data", (d: Buffer) => (err += d.toString()));
    const npmExit = new Promise<number | null>((r) => npm.once("exit", (code) => r(code)));
    try {
      await waitFor(() => /workers \+ http running/.test(out), 60_000, () => `npm start to be up:\n${out}\n${err}`);
      const pid = jsonLines(err.split("\n").filter((l) => l.startsWith("{")).join("\n"))[0]!.pid;
      strays.add(pid);
      expect(pid).not.toBe(npm.pid);
      npm.kill("SIGTERM");
      expect(await waitForExit(pid, 20_000)).toBe(true);
      await npmExit;
      expect(jsonLines(err.split("\n").filter((l) => l.startsWith("{")).join("\n")).find((l) => l.msg === "shutting down")?.signal).toBe("SIGTERM");
    } finally {
      if (npm.exitCode === null) npm.kill("SIGKILL");
    }
  });
});
