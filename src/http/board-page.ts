// Bull Board's page as an ops page must be: nothing from a third party. Its template links Google Fonts
// (fonts.googleapis.com), which would tell Google who opens the board and when, and fails offline; the page
// is served without that link (its CSS falls back to the system's sans-serif and monospace), and a
// Content-Security-Policy keeps every later request on this origin, whatever a future board version adds.
import type { NextFunction, Request, Response } from "express";

/** Only this origin: scripts (the board's JSON editor compiles schemas, hence 'unsafe-eval'), styles, images, fetches. */
export const BOARD_CSP = [
  "default-src 'self'",
  "script-src 'self' 'unsafe-eval'",
  "style-src 'self' 'unsafe-inline'",
  "img-src 'self' data: blob:",
  "font-src 'self' data:",
  "connect-src 'self'",
  "worker-src 'self' blob:",
  "base-uri 'self'",
  "form-action 'self'",
  "frame-ancestors 'none'",
].join("; ");

/** A <link> or <script> element that loads from another origin, with the line break after it. */
const THIRD_PARTY_ELEMENT = /<link\b[^>]*\bhref=["']?(?:https?:)?\/\/[^>]*>\s*|<script\b[^>]*\bsrc=["']?(?:https?:)?\/\/[^>]*>\s*<\/script>\s*/gi;

export function withoutThirdPartyElements(html: string): string {
  return html.replace(THIRD_PARTY_ELEMENT, "");
}

/** Mounted in front of the board: its rendered page loses third-party elements; every answer gets the CSP. */
export function boardPagePolicy(_req: Request, res: Response, next: NextFunction): void {
  res.setHeader("Content-Security-Policy", BOARD_CSP);
  const render = res.render.bind(res);
  // The board renders its page with res.render(view, params); with a callback Express hands us the HTML.
  res.render = ((view: string, options?: object) =>
    render(view, options ?? {}, (err: Error | null, html?: string) => {
      if (err) return next(err);
      res.send(withoutThirdPartyElements(html ?? ""));
    })) as Response["render"];
  next();
}
