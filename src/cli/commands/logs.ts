// `logs SESSION_ID`: the session's stored log lines (already redacted when written).
import { SessionId } from "../../sandcastle/contract.js";
import { readSessionLog, sessionLogKey } from "../../sandcastle/session-log.js";
import { parseInput } from "../../invalid-input.js";
import type { Runtime } from "../runtime.js";

export async function logsCommand(rt: Runtime, sessionId: string): Promise<number> {
  const id = parseInput(SessionId, sessionId, "SESSION_ID");
  const lines = await readSessionLog(rt.redis, sessionLogKey(rt.config.SCQ_KEY_PREFIX, id));
  if (lines.length > 0) process.stdout.write(`${lines.join("\n")}\n`);
  return 0;
}
