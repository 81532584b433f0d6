// DNS rebinding guard: a page on attacker.test whose name is made to resolve to 127.0.0.1 reaches this server
// with `Host: attacker.test`. Only host names we expect are served: loopback ones always; others only with a
// token configured and listed in SCQ_ALLOWED_HOSTS (`*`: any, for a proxy that checks them itself).
import { isIP } from "node:net";
import type { NextFunction, Request, Response } from "express";
import { sendProblem } from "./problem.js";

export function isLoopback(host: string): boolean {
  if (host === "localhost" || host.endsWith(".localhost")) return true;
  if (isIP(host) === 4) return host.startsWith("127.");
  return host === "::1" || host === "[::1]";
}

/** The host name of a Host header, lower case, without its port (IPv6 keeps its brackets off). */
export function hostName(header: string): string | null {
  const h = header.trim().toLowerCase();
  const v6 = /^\[([0-9a-f:.]+)\](?::\d{1,5})?$/.exec(h);
  if (v6) return v6[1]!;
  const m = /^([a-z0-9.-]+)(?::\d{1,5})?$/.exec(h);
  return m ? m[1]! : null;
}

export function hostAllowed(header: string | undefined, allowed: readonly string[] | "*", tokenSet: boolean): boolean {
  if (header === undefined) return false;
  const name = hostName(header);
  if (name === null) return false;
  if (isLoopback(name)) return true;
  if (!tokenSet) return false;
  if (allowed === "*") return true;
  const full = header.trim().toLowerCase();
  return allowed.some((a) => a === name || a === full);
}

export function checkHost(allowed: readonly string[] | "*", tokenSet: boolean) {
  return (req: Request, res: Response, next: NextFunction): void => {
    if (hostAllowed(req.headers.host, allowed, tokenSet)) return next();
    sendProblem(
      res,
      "host_not_allowed",
      tokenSet
        ? "this Host is not served: add it to SCQ_ALLOWED_HOSTS"
        : "this Host is not served: without SCQ_API_TOKEN only loopback host names (127.0.0.1, localhost, [::1]) are",
    );
  };
}
