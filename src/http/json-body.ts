// Reading a JSON request body, bounded three ways: at most `limit` bytes are read — a body that
// declares or reaches more is answered 413 at that point and its connection closed, the rest never read (the
// body parser we used read all of it before answering); at most JSON_MAX_DEPTH levels of nesting —
// deeper is refused naming where, before anything walks it recursively (the Idempotency-Key's hash
// overflowed the stack: a 500); and only as long as the server's request timeout allows (server.ts).
import type { NextFunction, Request, RequestHandler, Response } from "express";

/** Deeper than any request of ours (a run request is four levels at most), shallow enough for any recursion. */
export const JSON_MAX_DEPTH = 32;

/** How long a refused connection stays half-closed for its answer to be read. */
const LINGER_MS = 2000;

export type BodyProblem = "too_large" | "not_json" | "too_deep" | "encoded";

/** What the body reader hands to the router's error handler. */
export class BodyError extends Error {
  constructor(
    readonly problem: BodyProblem,
    /** too_deep: the top-level field holding the too-deep value, or "(top level)". */
    readonly field: string = "(top level)",
  ) {
    super(`request body: ${problem}`);
    this.name = "BodyError";
  }
}

/** Parses the body into `req.body`; the errors go to the next error handler as a BodyError. */
export function jsonBody(limit: number): RequestHandler {
  return (req: Request, res: Response, next: NextFunction) => {
    const refuse = (err: BodyError) => {
      if (err.problem === "too_large") closeAfterAnswer(req, res);
      next(err);
    };
    const encoding = req.headers["content-encoding"];
    if (encoding !== undefined && encoding.toLowerCase() !== "identity") return refuse(new BodyError("encoded"));
    const declared = Number(req.headers["content-length"]);
    if (Number.isFinite(declared) && declared > limit) return refuse(new BodyError("too_large"));

    const chunks: Buffer[] = [];
    let size = 0;
    let done = false;
    const finish = (err: BodyError | null) => {
      if (done) return;
      done = true;
      req.off("data", onData);
      req.off("end", onEnd);
      if (err) return refuse(err);
      let value: unknown;
      try {
        value = JSON.parse(Buffer.concat(chunks, size).toString("utf8"));
      } catch {
        return refuse(new BodyError("not_json"));
      }
      const deep = tooDeepAt(value, JSON_MAX_DEPTH);
      if (deep !== null) return refuse(new BodyError("too_deep", deep));
      req.body = value;
      next();
    };
    const onData = (chunk: Buffer) => {
      size += chunk.length;
      if (size > limit) return finish(new BodyError("too_large"));
      chunks.push(chunk);
    };
    const onEnd = () => finish(null);
    req.on("data", onData);
    req.on("end", onEnd);
    // A request cut off (the client went away, or the server's request timeout answered 408): nothing to answer.
    req.once("close", () => {
      done = true;
    });
  };
}

/**
 * The rest of a body past the limit is never read: the request is paused (the client's sending stalls on TCP),
 * and once the answer is written the connection is ended, then cut LINGER_MS later. Not at once: a socket closed
 * with unread bytes is reset, and a reset can discard the answer before the client reads it.
 */
function closeAfterAnswer(req: Request, res: Response): void {
  req.pause();
  res.once("finish", () => {
    const socket = req.socket;
    socket.end();
    setTimeout(() => socket.destroy(), LINGER_MS).unref();
  });
}

/**
 * Where a value nests deeper than `max` arrays and objects: the top-level field holding it ("(top level)" when
 * the value itself is an array or starts there), or null. A walk with its own stack: the depth is unknown yet.
 */
export function tooDeepAt(value: unknown, max: number): string | null {
  const stack: Array<{ value: unknown; depth: number; field: string }> = [{ value, depth: 0, field: "(top level)" }];
  while (stack.length > 0) {
    const { value: v, depth, field } = stack.pop()!;
    if (v === null || typeof v !== "object") continue;
    if (depth + 1 > max) return field;
    const topObject = depth === 0 && !Array.isArray(v);
    for (const [k, child] of Object.entries(v)) stack.push({ value: child, depth: depth + 1, field: topObject ? k : field });
  }
  return null;
}
