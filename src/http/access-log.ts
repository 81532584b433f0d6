// One log line per HTTP request, once it is answered: method, path, status, milliseconds, client address.
// Refusals (401, 403, 421) are seen like the rest: the log is mounted before every check. It names no
// header and no query string, so no token, cookie, password or Telegram secret can reach it.
import type { NextFunction, Request, Response } from "express";
import type { Logger } from "../log.js";

/** A pino level, or "silent" for no access log (SCQ_ACCESS_LOG_LEVEL). */
export type AccessLogLevel = "fatal" | "error" | "warn" | "info" | "debug" | "trace" | "silent";

export function accessLog(log: Logger, level: AccessLogLevel) {
  return (req: Request, res: Response, next: NextFunction): void => {
    if (level === "silent") return next();
    const started = process.hrtime.bigint();
    const path = req.originalUrl.split("?")[0] ?? "";
    // "close" too: a client that goes away (an SSE reader) never sees "finish".
    let done = false;
    const line = () => {
      if (done) return;
      done = true;
      const ms = Number(process.hrtime.bigint() - started) / 1e6;
      log[level](
        { access: { method: req.method, path, status: res.statusCode, ms: Math.round(ms * 10) / 10, client: req.socket.remoteAddress ?? null } },
        "http request",
      );
    };
    res.once("finish", line);
    res.once("close", line);
    next();
  };
}
