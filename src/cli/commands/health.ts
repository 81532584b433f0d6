// `health [--worker] [--http]`: the check a container engine or a supervisor runs on this host. --worker: Redis answers
// and a worker of this host is connected to every queue; --http: this host's server answers /healthz. Neither: both,
// what `start` runs. One line either way; exit 0 healthy, 1 not.
import { request } from "node:http";
import { hostname } from "node:os";
import { workersOnHost } from "../../../queues/index.js";
import { loadConfig } from "../../config.js";
import { openRuntime } from "../runtime.js";

/** A check that does not answer within this long is a failed check (the engine's own timeout may be shorter). */
const HTTP_TIMEOUT_MS = 5000;

export async function healthCommand(opts: { worker?: boolean; http?: boolean }): Promise<number> {
  const both = !opts.worker && !opts.http;
  const problems: string[] = [];
  const fine: string[] = [];
  if (opts.http || both) {
    const config = loadConfig();
    const url = healthzUrl(config.HOST, config.PORT);
    const status = await getStatus(url).catch((err: Error) => err.message);
    if (status === 200) fine.push(`http answers ${url}`);
    else problems.push(`http: ${url} ${typeof status === "number" ? `answered ${status}` : `did not answer (${status})`}`);
  }
  if (opts.worker || both) {
    const host = hostname();
    const rt = await openRuntime("client");
    try {
      const missing: string[] = [];
      for (const queue of rt.queues.all) if ((await workersOnHost(queue, host)) === 0) missing.push(queue.name);
      if (missing.length === 0) fine.push(`workers of ${host} on ${rt.queues.all.map((q) => q.name).join(", ")}`);
      else problems.push(`no worker of ${host} is connected to ${missing.join(", ")}`);
    } finally {
      await rt.shutdown.run();
    }
  }
  if (problems.length > 0) {
    process.stderr.write(`sandcastle-queue: unhealthy: ${problems.join("; ")}\n`);
    return 1;
  }
  process.stdout.write(`healthy: ${fine.join("; ")}\n`);
  return 0;
}

/** A wildcard bind is reached on loopback; the Host header is a loopback name, which the Host check always takes. */
function healthzUrl(host: string, port: number): string {
  const target = host === "0.0.0.0" || host === "::" ? "127.0.0.1" : host.includes(":") ? `[${host}]` : host;
  return `http://${target}:${port}/healthz`;
}

function getStatus(url: string): Promise<number> {
  return new Promise((resolve, reject) => {
    const req = request(url, { headers: { host: "localhost" }, timeout: HTTP_TIMEOUT_MS }, (res) => {
      res.resume();
      resolve(res.statusCode ?? 0);
    });
    req.on("timeout", () => req.destroy(new Error(`no answer within ${HTTP_TIMEOUT_MS / 1000} s`)));
    req.on("error", reject);
    req.end();
  });
}
