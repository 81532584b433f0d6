// `logs SESSION_ID`: the session's stored log lines (already redacted when written), as people see them: an
// agent's behind a gutter, its controls shown, never obeyed (service-lines.ts, ADR 0045).
import { AppError } from "../../errors.js";
import { SessionId } from "../../sandcastle/contract.js";
import { readSessionLog, RETAIN_SECONDS, sessionLogKey } from "../../session-log/session-log.js";
import { displayLine } from "../../session-log/service-lines.js";
import { parseInput } from "../../invalid-input.js";
import type { Runtime } from "../runtime.js";

export async function logsCommand(rt: Runtime, sessionId: string): Promise<number> {
  const id = parseInput(SessionId, sessionId, "SESSION_ID");
  const key = sessionLogKey(rt.config.SCQ_KEY_PREFIX, id);
  if ((await rt.redis.exists(key)) === 0) {
    throw new AppError(
      "invalid_input",
      `no session log for ${id}: no run of that session was enqueued here, or its log expired (${RETAIN_SECONDS / 86400} days after its last line)`,
    );
  }
  const lines = await readSessionLog(rt.redis, key);
  if (lines.length > 0) process.stdout.write(`${lines.map(displayLine).join("\n")}\n`);
  return 0;
}
