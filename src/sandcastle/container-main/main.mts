// The main process of a run container (ADR 0049), and of a sandbox shell's container beside its shell. One process
// with up to three roles: it holds the container's lifetime — it ends itself after --seconds (the run's deadline plus
// the kill grace) and the container, started with --rm, goes with it; it serves the child's execs over the channel
// it connects out to (--exec; exec-server.mts), and ends when that channel closes; and it forwards the agent's proxy
// port to the run's egress proxy (--egress-port, --egress-socket; ADR 0035). A warm container's run moves its end to the
// run's own over the channel (ADR 0053). Plain Node, no import of the project:
// this directory is mounted read-only into any image with `node` on PATH.
//   node main.mjs --seconds=<n> [--exec=<socket>] [--egress-port=<port> --egress-socket=<socket>]
import { writeSync } from "node:fs";
import { parseArgs } from "node:util";
import { forwardEgress } from "./egress-forwarder.mjs";
import { serveExecs } from "./exec-server.mjs";

const USAGE = "usage: main.mjs --seconds=<n> [--exec=<socket>] [--egress-port=<port> --egress-socket=<socket>]\n";

function fail(): never {
  // Written whole before the exit, whatever stderr is (a pipe, a file, a terminal).
  writeSync(2, USAGE);
  process.exit(2);
}

let values: { seconds?: string; exec?: string; "egress-port"?: string; "egress-socket"?: string };
try {
  ({ values } = parseArgs({
    options: { seconds: { type: "string" }, exec: { type: "string" }, "egress-port": { type: "string" }, "egress-socket": { type: "string" } },
    strict: true,
  }));
} catch {
  fail();
}
const seconds = Number(values.seconds);
const egressPort = values["egress-port"] === undefined ? undefined : Number(values["egress-port"]);
if (
  !Number.isFinite(seconds) ||
  (egressPort === undefined) !== (values["egress-socket"] === undefined) ||
  (egressPort !== undefined && !Number.isInteger(egressPort))
)
  fail();

const end = (): never => process.exit(0);
let timer: NodeJS.Timeout | undefined;
/** The container ends `after` seconds from now (a later deadline from the host replaces the first). */
const endIn = (after: number): void => {
  clearTimeout(timer);
  // A timer holds at most 2^31-1 ms (~24.8 days); a longer one would fire at once.
  timer = setTimeout(end, Math.min(Math.max(1, after) * 1000, 2 ** 31 - 1));
};
endIn(seconds);
for (const signal of ["SIGTERM", "SIGINT"] as const) process.on(signal, end);
if (egressPort !== undefined) forwardEgress(egressPort, values["egress-socket"]!);
if (values.exec !== undefined) serveExecs(values.exec, end, endIn);
