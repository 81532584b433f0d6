// `killswitch on|off|status`: one state in Redis for every worker.
import { userInfo } from "node:os";
import { AppError } from "../../errors.js";
import type { Runtime } from "../runtime.js";

export async function killSwitchCommand(rt: Runtime, action: string): Promise<number> {
  if (action === "on" || action === "off") {
    await rt.killSwitch.set(action === "on", `cli:${safeUser()}@pid${process.pid}`);
  } else if (action !== "status") {
    throw new AppError("invalid_input", `killswitch takes on, off or status (got "${action}")`);
  }
  process.stdout.write(`${JSON.stringify(await rt.killSwitch.state())}\n`);
  return 0;
}

function safeUser(): string {
  try {
    return userInfo().username;
  } catch {
    return "unknown";
  }
}
