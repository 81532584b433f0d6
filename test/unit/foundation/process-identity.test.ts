// A process named by its identity can be told alive or gone later, by pid and start time (pids are reused).
import { spawnSync } from "node:child_process";
import { hostname } from "node:os";
import { describe, expect, it } from "vitest";
import { identityLives, ownIdentity } from "../../../src/process-identity.js";

describe("process identity", () => {
  it("this process lives; the same pid with another start time, and a process that exited, do not", () => {
    const own = ownIdentity();
    expect(own.split(" ")).toHaveLength(4);
    expect(identityLives(own)).toBe(true);
    expect(identityLives(own.replace(/ \d+$/, " 1"))).toBe(false);
    const gone = spawnSync("sh", ["-c", 'echo "$$ $(cut -d" " -f22 /proc/$$/stat)"'], { encoding: "utf8" }).stdout.trim();
    const [host, boot] = own.split(" ");
    expect(identityLives(`${host} ${boot} ${gone}`)).toBe(false);
  });

  it("another boot is gone; another machine, or a line that names no process, cannot be told", () => {
    const [, , pid, ticks] = ownIdentity().split(" ");
    expect(identityLives(`${hostname()} another-boot ${pid} ${ticks}`)).toBe(false);
    expect(identityLives(`not-${hostname()} boot ${pid} ${ticks}`)).toBeUndefined();
    expect(identityLives("")).toBeUndefined();
    expect(identityLives(`${hostname()} boot zero 5`)).toBeUndefined();
  });
});
