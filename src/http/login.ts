// The browser's way in: a token typed once at /login becomes an HttpOnly SameSite=Strict session cookie,
// so Bull Board's page and its own fetches are authenticated alike. /logout ends the session.
import express, { type Request, type Response, type Router } from "express";
import { cookieValue, roleOf, SESSION_COOKIE, sessionCookie, type SessionStore, type Tokens } from "./auth.js";

export const LOGIN_PATH = "/login";

const escape = (s: string) => s.replace(/[&<>"']/g, (c) => `&#${c.charCodeAt(0)};`);

/** Only a path of this site: never `//other.host` or `https://…` (an open redirect). */
export function safeNext(next: unknown, fallback: string): string {
  return typeof next === "string" && /^\/(?![/\\])[^\s]*$/.test(next) ? next : fallback;
}

function page(next: string, error: string | null): string {
  return `<!doctype html>
<html lang="en"><head><meta charset="utf-8"><meta name="viewport" content="width=device-width, initial-scale=1">
<title>sandcastle-queue: log in</title>
<style>body{font-family:system-ui,sans-serif;max-width:26rem;margin:4rem auto;padding:0 1rem}
label,input,button{display:block;width:100%;box-sizing:border-box}input{margin:.4rem 0 1rem;padding:.5rem}button{padding:.5rem}.error{color:#b00020}</style>
</head><body>
<h1>sandcastle-queue</h1>
${error ? `<p class="error" role="alert">${escape(error)}</p>` : ""}
<form method="post" action="${LOGIN_PATH}">
<label for="token">Token (SCQ_API_TOKEN, or SCQ_VIEWER_TOKEN for read-only)</label>
<input id="token" name="token" type="password" autocomplete="current-password" required autofocus>
<input type="hidden" name="next" value="${escape(next)}">
<button type="submit">Log in</button>
</form>
</body></html>`;
}

export function loginRouter(tokens: Tokens, sessions: SessionStore, defaultNext: string): Router {
  const router = express.Router();
  const html = (res: Response, status: number, body: string) => {
    res.status(status).type("html").setHeader("Cache-Control", "no-store");
    res.setHeader("Content-Security-Policy", "default-src 'none'; style-src 'unsafe-inline'; form-action 'self'; frame-ancestors 'none'");
    res.send(body);
  };

  router.get(LOGIN_PATH, (req: Request, res: Response) => {
    html(res, 200, page(safeNext(req.query.next, defaultNext), null));
  });

  router.post(LOGIN_PATH, express.urlencoded({ extended: false, limit: "4kb" }), async (req: Request, res: Response) => {
    const body = (req.body ?? {}) as { token?: unknown; next?: unknown };
    const next = safeNext(body.next, defaultNext);
    const role = typeof body.token === "string" && tokens.admin !== undefined ? roleOf(tokens, body.token) : null;
    if (role === null) {
      html(res, 401, page(next, "That token is not valid here."));
      return;
    }
    const id = await sessions.create(role);
    res.setHeader("Set-Cookie", sessionCookie(req, id));
    res.redirect(303, next);
  });

  router.post("/logout", async (req: Request, res: Response) => {
    const id = cookieValue(req.headers.cookie, SESSION_COOKIE);
    if (id !== null) await sessions.end(id).catch(() => {});
    res.setHeader("Set-Cookie", sessionCookie(req, null));
    res.redirect(303, LOGIN_PATH);
  });
  return router;
}
