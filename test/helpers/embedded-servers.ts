// The redis-server processes serving one data dir's embedded socket, found by their command line; and a sweep of
// them after a test (by pid: only the servers of that test's own data dir).
import { execFileSync } from "node:child_process";

export function embeddedServers(dataDir: string): number[] {
  try {
    // redis-server's own argv: other processes name the socket too (the deployment label in a container sweep's `ps`).
    return execFileSync("pgrep", ["-f", `^\\S*redis-server .*${dataDir.replace(/[.*+?^${}()|[\]\\]/g, "\\$&")}/redis/redis\\.sock`], { encoding: "utf8" }).trim().split("\n").filter(Boolean).map(Number);
  } catch {
    return [];
  }
}

export function killEmbeddedServers(dataDir: string): void {
  for (const pid of embeddedServers(dataDir)) {
    try {
      process.kill(pid, "SIGKILL");
    } catch {
      // gone
    }
  }
}
