// POST /telegram/webhook: reactions to drafts, from Telegram. Public (Telegram sends no API
// token) but every request must carry X-Telegram-Bot-Api-Secret-Token equal to
// TELEGRAM_WEBHOOK_SECRET, compared in constant time before the body is even read. A wrong,
// missing, other-length or oversized secret is 401 and changes nothing; with no secret
// configured every request is 401.
//
// A reaction becomes a `draft-reaction` job (id react-tg-<update_id>) and the answer is 200 at
// once; Telegram retries non-2xx answers, so a delivery that could not be recorded is 503 (also
// when no REVIEW_CHAT_ID is configured: nothing could be matched to a draft).
// The same update delivered twice acts once: its update_id is claimed in Redis (kept 7 days,
// longer than finished jobs are) before the job is added.
import express, { type NextFunction, type Request, type Response, type Router } from "express";
import type { Logger } from "../log.js";
import type { DraftStore } from "../margot/store/drafts.js";
import { parseUpdate, type UpdateFilter } from "../review/telegram-updates.js";
import { sameSecret } from "./auth.js";
import { BodyError, jsonBody } from "./json-body.js";
import { methodNotAllowed } from "./method-not-allowed.js";
import { SERVICE_OPERATIONS } from "./operations.js";

export const TELEGRAM_WEBHOOK_PATH = "/telegram";
/** Updates are small (a draft message quoted in a reply is ≤ 4096 characters). */
export const WEBHOOK_BODY_LIMIT_BYTES = 64 * 1024;

export interface TelegramWebhookDeps {
  readonly secret: string | undefined;
  readonly filter: UpdateFilter | null;
  readonly drafts: DraftStore;
  readonly enqueueReaction: (
    input: { draft_id: string; reaction: string; reason: string | null; actor: string; source: "telegram"; update_id: number },
    jobId: string,
  ) => Promise<unknown>;
  readonly log: Logger;
}

export function telegramWebhookRouter(deps: TelegramWebhookDeps): Router {
  const router = express.Router();
  if (deps.secret === undefined) deps.log.warn("TELEGRAM_WEBHOOK_SECRET is not set: POST /telegram/webhook refuses every request");
  else if (deps.filter === null) deps.log.warn("REVIEW_CHAT_ID is not set: POST /telegram/webhook answers 503 to every update (nothing can be recorded)");

  const checkSecret = (req: Request, res: Response, next: NextFunction): void => {
    const given = req.headers["x-telegram-bot-api-secret-token"];
    if (deps.secret !== undefined && typeof given === "string" && sameSecret(given, deps.secret)) return next();
    res.status(401).json({ ok: false, error: "unauthorized" });
  };

  router.post("/webhook", checkSecret, jsonBody(WEBHOOK_BODY_LIMIT_BYTES), async (req: Request, res: Response) => {
    if (deps.filter === null) {
      // Never 200 for an update we did not record: Telegram would not send it again.
      res.status(503).json({ ok: false, error: "no review chat configured (REVIEW_CHAT_ID): the update was not recorded" });
      return;
    }
    const update = parseUpdate(req.body, deps.filter);
    if (update.kind === "ignore") {
      res.status(200).json({ ok: true, ignored: update.why });
      return;
    }
    try {
      const draftId = await deps.drafts.byMessage(update.chat_id, update.message_id);
      if (draftId === null) {
        res.status(200).json({ ok: true, ignored: "not a draft message" });
        return;
      }
      if (!(await deps.drafts.claimUpdate(update.update_id))) {
        res.status(200).json({ ok: true, duplicate: true });
        return;
      }
      try {
        await deps.enqueueReaction(
          {
            draft_id: draftId,
            reaction: update.reaction,
            reason: update.reason,
            actor: `telegram:${update.actor ?? "anonymous"}`,
            source: "telegram",
            update_id: update.update_id,
          },
          `react-tg-${update.update_id}`,
        );
      } catch (err) {
        await deps.drafts.releaseUpdate(update.update_id).catch(() => {});
        throw err;
      }
      deps.log.info({ update_id: update.update_id, draft_id: draftId, reaction: update.reaction }, "telegram reaction queued");
      res.status(200).json({ ok: true });
    } catch (err) {
      deps.log.error({ err: (err as Error).message, update_id: update.update_id }, "could not record a telegram update; Telegram will retry");
      res.status(503).json({ ok: false, error: "unavailable" });
    }
  });

  router.use(methodNotAllowed(SERVICE_OPERATIONS.filter((o) => o.path.startsWith(`${TELEGRAM_WEBHOOK_PATH}/`)), TELEGRAM_WEBHOOK_PATH));

  // Body errors (too large, not JSON, too deep), after the secret was accepted.
  router.use((err: unknown, _req: Request, res: Response, _next: NextFunction) => {
    const status = err instanceof BodyError && err.problem === "too_large" ? 413 : 400;
    res.status(status).json({ ok: false, error: status === 413 ? "body too large" : "bad request" });
  });
  return router;
}
