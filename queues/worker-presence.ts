// Which workers are connected, by host: each worker names its Redis connection `<host>:<pid>` (BullMQ puts the
// name in CLIENT LIST), so a health check on a host (a container's is its id) tells its own workers from others'.
import { hostname } from "node:os";
import type { Queue } from "bullmq";

/** The name a worker of this process gives its connection. */
export function workerName(host: string = hostname(), pid: number = process.pid): string {
  return `${host}:${pid}`;
}

/** How many workers of `host` are connected to the queue now. */
export async function workersOnHost(queue: Queue, host: string = hostname()): Promise<number> {
  const clients = await queue.getWorkers();
  const mark = `:w:${host}:`;
  return clients.filter((c) => typeof c.rawname === "string" && c.rawname.includes(mark) && /^\d+$/.test(c.rawname.slice(c.rawname.lastIndexOf(mark) + mark.length))).length;
}
