// Bearer token for API clients, basic auth (token as password) for browsers; compared in constant time.
import { createHash, timingSafeEqual } from "node:crypto";
import type { NextFunction, Request, Response } from "express";

/** Hash first: timingSafeEqual throws on different lengths, which would leak the token's length. */
export function sameSecret(given: string, expected: string): boolean {
  const a = createHash("sha256").update(given, "utf8").digest();
  const b = createHash("sha256").update(expected, "utf8").digest();
  return timingSafeEqual(a, b);
}

export function presentedToken(header: string | undefined): string | null {
  if (!header) return null;
  const bearer = /^Bearer\s+(\S+)\s*$/i.exec(header);
  if (bearer?.[1]) return bearer[1];
  const basic = /^Basic\s+([A-Za-z0-9+/=]+)\s*$/i.exec(header);
  if (basic?.[1]) {
    const decoded = Buffer.from(basic[1], "base64").toString("utf8");
    const colon = decoded.indexOf(":");
    return colon >= 0 ? decoded.slice(colon + 1) : null;
  }
  return null;
}

/** No token configured means a loopback-only server (enforced at bind): let requests through. */
export function requireToken(token: string | undefined) {
  return (req: Request, res: Response, next: NextFunction): void => {
    if (token === undefined) return next();
    const given = presentedToken(req.headers.authorization);
    if (given !== null && sameSecret(given, token)) return next();
    res.setHeader("WWW-Authenticate", 'Basic realm="sandcastle-queue", charset="UTF-8"');
    res.status(401).json({ error: "unauthorized", message: "send Authorization: Bearer <SCQ_API_TOKEN> (or basic auth with the token as password)" });
  };
}

/** Browsers attach basic-auth credentials to cross-site requests: refuse writes whose Origin is another site. */
export function sameOriginWrites(req: Request, res: Response, next: NextFunction): void {
  if (req.method === "GET" || req.method === "HEAD" || req.method === "OPTIONS") return next();
  const origin = req.headers.origin;
  if (origin === undefined) return next();
  try {
    if (new URL(origin).host === req.headers.host) return next();
  } catch {
    // fall through to refusal
  }
  res.status(403).json({ error: "cross_site_write", message: "writes from another origin are refused" });
}
