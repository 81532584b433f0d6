// deploy/systemd/sandcastle-queue.service, read as systemd reads it: restarted on failure, a dedicated user, SIGKILL
// only after the program's own graceful stop can have finished, hardened; and `systemd-analyze verify` (where
// installed) finds nothing to say about it.
import { spawnSync } from "node:child_process";
import { readFileSync, writeFileSync } from "node:fs";
import { join, resolve } from "node:path";
import { describe, expect, it } from "vitest";
import { WORKERS_STOP_MARGIN_MS } from "../../../workers/index.js";
import { tempDir } from "../../helpers/scope.js";

const UNIT = resolve(import.meta.dirname, "../../../deploy/systemd/sandcastle-queue.service");
const text = readFileSync(UNIT, "utf8");

/** section → key → every value the key was given, in order (systemd keys may repeat). */
function parseUnit(unit: string): Record<string, Record<string, string[]>> {
  const sections: Record<string, Record<string, string[]>> = {};
  let current: Record<string, string[]> | undefined;
  for (const raw of unit.split("\n")) {
    const line = raw.trim();
    if (line === "" || line.startsWith("#") || line.startsWith(";")) continue;
    const header = /^\[(.+)\]$/.exec(line);
    if (header) {
      current = sections[header[1]!] ??= {};
      continue;
    }
    const eq = line.indexOf("=");
    if (!current || eq < 0) throw new Error(`not a unit line: ${line}`);
    (current[line.slice(0, eq)] ??= []).push(line.slice(eq + 1));
  }
  return sections;
}

const unit = parseUnit(text);
const service = unit.Service!;
const one = (key: string) => service[key]?.at(-1);
const environment = Object.fromEntries((service.Environment ?? []).map((e) => [e.slice(0, e.indexOf("=")), e.slice(e.indexOf("=") + 1)]));

describe("the systemd unit", () => {
  it("runs `start` (workers and HTTP) and restarts it when it fails, not when it was stopped", () => {
    expect(one("ExecStart")).toMatch(/\/dist\/src\/cli\/main\.js start$/);
    expect(one("Restart")).toBe("on-failure");
    expect(one("RestartSec")).toMatch(/^\d+s$/);
    expect(unit.Install?.WantedBy).toEqual(["multi-user.target"]);
  });

  it("runs as a dedicated user, never root, with its state in a directory of its own", () => {
    expect(one("User")).toBe("sandcastle-queue");
    expect(one("Group")).toBe("sandcastle-queue");
    expect(one("StateDirectory")).toBe("sandcastle-queue");
    expect(environment.SCQ_DATA_DIR).toBe("/var/lib/sandcastle-queue");
    expect(one("StateDirectoryMode")).toBe("0700");
  });

  it("sends SIGTERM to the program and SIGKILL only after its grace and its own stop can have passed", () => {
    expect(one("KillSignal")).toBe("SIGTERM");
    // The main process alone gets SIGTERM: the program stops its runs' process groups itself.
    expect(one("KillMode")).toBe("mixed");
    const grace = Number(environment.SCQ_SHUTDOWN_GRACE_SECONDS);
    expect(grace).toBe(30);
    expect(Number(/^(\d+)$/.exec(one("TimeoutStopSec") ?? "")?.[1])).toBeGreaterThanOrEqual(grace + WORKERS_STOP_MARGIN_MS / 1000 + 10);
  });

  it("is hardened: no new privileges, no capabilities, a read-only system, private /tmp and devices", () => {
    expect(one("NoNewPrivileges")).toBe("yes");
    expect(one("CapabilityBoundingSet")).toBe("");
    expect(one("ProtectSystem")).toBe("strict");
    expect(one("ProtectHome")).toBe("read-only");
    expect(one("PrivateTmp")).toBe("yes");
    expect(one("PrivateDevices")).toBe("yes");
    expect(one("RestrictSUIDSGID")).toBe("yes");
    expect(one("UMask")).toBe("0077");
    // V8 compiles code at run time: MemoryDenyWriteExecute would kill Node.
    expect(service.MemoryDenyWriteExecute).toBeUndefined();
  });

  it("systemd-analyze verify finds nothing to say (the Node of ExecStart pointed at this machine's), and would say it", (ctx) => {
    if (spawnSync("sh", ["-c", "command -v systemd-analyze"]).status !== 0) return ctx.skip("systemd-analyze is not installed here (apt-get install systemd)");
    const dir = tempDir("scq-unit");
    try {
      // verify checks that ExecStart's program exists; /usr/local/bin/node is where the README installs Node 24.
      const verify = (body: string) => {
        const path = join(dir.path, "sandcastle-queue.service");
        writeFileSync(path, body.replace("ExecStart=/usr/local/bin/node ", `ExecStart=${process.execPath} `));
        const out = spawnSync("systemd-analyze", ["verify", "--man=no", path], { encoding: "utf8", cwd: dir.path });
        return { code: out.status, output: `${out.stdout}${out.stderr}`.trim() };
      };
      expect(verify(text)).toEqual({ code: 0, output: "" });
      // The same check on a unit with a misspelt key and a bad value: it speaks.
      const broken = verify(text.replace("NoNewPrivileges=yes", "NoNewPrivilege=yes\nProtectSystem=sometimes"));
      expect(broken.output).toMatch(/Unknown key 'NoNewPrivilege'/);
      expect(broken.output).toMatch(/Failed to parse protect system value, ignoring: sometimes/);
    } finally {
      dir.remove();
    }
  });
});
