// Who may do what over HTTP. Two tokens: the admin token (SCQ_API_TOKEN: everything) and the viewer token
// (SCQ_VIEWER_TOKEN: reads only). API clients send one as a Bearer token (or basic auth, token as password);
// browsers log in once (/login) and carry an HttpOnly SameSite=Strict session cookie, which Bull Board's own
// fetches then carry too. Tokens are compared in constant time. Without an admin token the server is
// loopback-only (enforced at bind and by the Host check) and everyone is admin.
import { createHash, randomBytes, timingSafeEqual } from "node:crypto";
import type { NextFunction, Request, Response } from "express";
import type { RedisClient } from "../redis/connect.js";
import { sendProblem } from "./problem.js";

export type Role = "admin" | "viewer";

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

export interface Tokens {
  readonly admin: string | undefined;
  readonly viewer: string | undefined;
}

/** The role a token grants, or null. Both comparisons always run (no early exit on the first). */
export function roleOf(tokens: Tokens, given: string): Role | null {
  const admin = tokens.admin !== undefined && sameSecret(given, tokens.admin);
  const viewer = tokens.viewer !== undefined && sameSecret(given, tokens.viewer);
  return admin ? "admin" : viewer ? "viewer" : null;
}

export const SESSION_COOKIE = "scq_session";
export const SESSION_TTL_SECONDS = 12 * 3600;

/** Browser sessions in Redis; a session remembers which token made it, so changing that token ends it. */
export class SessionStore {
  constructor(
    private readonly redis: RedisClient,
    private readonly prefix: string,
    private readonly tokens: Tokens,
  ) {}

  private key(id: string): string {
    return `${this.prefix}:http-session:${createHash("sha256").update(id).digest("hex")}`;
  }

  private fingerprint(role: Role): string {
    const token = role === "admin" ? this.tokens.admin : this.tokens.viewer;
    return createHash("sha256").update(`scq-session:${token ?? ""}`).digest("hex").slice(0, 32);
  }

  async create(role: Role): Promise<string> {
    const id = randomBytes(32).toString("base64url");
    await this.redis.set(this.key(id), JSON.stringify({ role, fp: this.fingerprint(role) }), "EX", SESSION_TTL_SECONDS);
    return id;
  }

  async lookup(id: string): Promise<Role | null> {
    if (!/^[A-Za-z0-9_-]{20,100}$/.test(id)) return null;
    const raw = await this.redis.get(this.key(id));
    if (raw === null) return null;
    try {
      const s = JSON.parse(raw) as { role?: unknown; fp?: unknown };
      if ((s.role === "admin" || s.role === "viewer") && s.fp === this.fingerprint(s.role)) return s.role;
    } catch {
      // a damaged entry is no session
    }
    return null;
  }

  async end(id: string): Promise<void> {
    await this.redis.del(this.key(id));
  }
}

export function cookieValue(header: string | undefined, name: string): string | null {
  if (!header) return null;
  for (const part of header.split(";")) {
    const eq = part.indexOf("=");
    if (eq > 0 && part.slice(0, eq).trim() === name) return part.slice(eq + 1).trim();
  }
  return null;
}

export function sessionCookie(req: Request, id: string | null): string {
  const attrs = ["Path=/", "HttpOnly", "SameSite=Strict", id === null ? "Max-Age=0" : `Max-Age=${SESSION_TTL_SECONDS}`];
  if (req.secure) attrs.push("Secure");
  return `${SESSION_COOKIE}=${id ?? ""}; ${attrs.join("; ")}`;
}

/** What authenticate() leaves in res.locals. */
export interface AuthLocals {
  role: Role;
  via: "token" | "cookie" | "open";
}

export function authOf(res: Response): AuthLocals {
  return res.locals as AuthLocals;
}

const wantsHtml = (req: Request) => req.method === "GET" && (req.headers.accept ?? "").includes("text/html");

/**
 * The challenge of a 401 (RFC 9110 §11.6.1, RFC 6750 §3). Bearer only: a Basic challenge would make a
 * browser pop its own login dialog over Bull Board's fetches when a session ends (basic auth with the token
 * as password is still accepted).
 */
export function authChallenge(tokenGiven: boolean): string {
  return `Bearer realm="sandcastle-queue"${tokenGiven ? ', error="invalid_token"' : ""}`;
}

/**
 * Sets res.locals.role, or answers: 401 (a problem, with WWW-Authenticate) to API clients, a redirect to the
 * login page to a browser.
 * No admin token configured: the server is loopback-only, and every request is admin.
 */
export function authenticate(tokens: Tokens, sessions: SessionStore, loginPath: string) {
  return async (req: Request, res: Response, next: NextFunction): Promise<void> => {
    const locals = res.locals as Partial<AuthLocals>;
    if (tokens.admin === undefined) {
      locals.role = "admin";
      locals.via = "open";
      return next();
    }
    const given = presentedToken(req.headers.authorization);
    if (given !== null) {
      const role = roleOf(tokens, given);
      if (role !== null) {
        locals.role = role;
        locals.via = "token";
        return next();
      }
    } else {
      const id = cookieValue(req.headers.cookie, SESSION_COOKIE);
      const role = id !== null ? await sessions.lookup(id).catch(() => null) : null;
      if (role !== null) {
        locals.role = role;
        locals.via = "cookie";
        return next();
      }
    }
    if (wantsHtml(req)) {
      res.redirect(303, `${loginPath}?next=${encodeURIComponent(req.originalUrl)}`);
      return;
    }
    res.setHeader("WWW-Authenticate", authChallenge(given !== null));
    sendProblem(
      res,
      "unauthorized",
      given !== null ? "that token is not one of this server's" : "send Authorization: Bearer <token> (SCQ_API_TOKEN or SCQ_VIEWER_TOKEN), or log in at /login",
    );
  };
}

/** Writes need the admin token; a viewer may only read. */
export function requireAdmin(req: Request, res: Response, next: NextFunction): void {
  if (authOf(res).role === "admin") return next();
  sendProblem(res, "forbidden", `${req.method} needs the admin token (SCQ_API_TOKEN); this one is read-only`);
}

const READ_METHODS = new Set(["GET", "HEAD", "OPTIONS"]);

/**
 * Browsers send cookies (and cached basic auth) with cross-site requests: a write carried by a cookie must
 * come from our own origin, and a write with any Origin must name ours.
 */
export function sameOriginWrites(req: Request, res: Response, next: NextFunction): void {
  if (READ_METHODS.has(req.method)) return next();
  const origin = req.headers.origin;
  if (origin === undefined && (res.locals as Partial<AuthLocals>).via !== "cookie") return next();
  try {
    if (origin !== undefined && new URL(origin).host === req.headers.host) return next();
  } catch {
    // fall through to refusal
  }
  sendProblem(res, "cross_site_write", "writes from another origin are refused");
}
