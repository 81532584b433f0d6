// A path the service serves, asked with a method it does not take, is 405 with the methods it does take in
// Allow (RFC 9110 §15.5.6), never a 404 that reads as "no such path". OPTIONS is answered with Allow alone.
import express, { type Request, type Response, type Router } from "express";
import { allowedMethods, type Operation } from "./operations.js";
import { sendProblem } from "./problem.js";

/** A router answering every method of `operations`' paths that no route before it took; mounted at `mountPath`. */
export function methodNotAllowed(operations: readonly Operation[], mountPath = ""): Router {
  const router = express.Router();
  for (const path of new Set(operations.map((o) => o.path))) {
    const allow = allowedMethods(path, operations);
    router.all(path.slice(mountPath.length), (req: Request, res: Response) => {
      res.setHeader("Allow", allow.join(", "));
      if (req.method === "OPTIONS") return void res.status(204).end();
      sendProblem(res, "method_not_allowed", `${req.method} is not a method of ${path}: it takes ${allow.join(", ")}`);
    });
  }
  return router;
}
