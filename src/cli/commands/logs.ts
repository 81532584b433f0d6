// `logs SESSION_ID`: the session's stored log lines (already redacted when written).
import { AppError } from "../../errors.js";
import { SessionId } from "../../sandcastle/contract.js";
import { readSessionLog, RETAIN_SECONDS, sessionLogKey } from "../../sandcastle/session-log.js";
import { parseInput } from "../../invalid-input.js";
import type { Runtime } from "../runtime.js";

export async function logsCommand(rt: Runtime, sessionId: string): Promise<number> {
  const id = parseInput(SessionId, sessionId, "SESSION_ID");
  const key = sessionLogKey(rt.config.SCQ_KEY_PREFIX, id);
  if ((await rt.redis.exists(key)) === 0) {
    throw new AppError("invalid_input", `no session log for ${id}: no run of that session was enqueued here, or its log expired (${RETAIN_SECONDS / 86400} days after its last line)`);
  }
  const lines = await readSessionLog(rt.redis, key);
  if (lines.length > 0) process.stdout.write(`${lines.join("\n")}\n`);
  return 0;
}
