// `killswitch on|off|status`: one state in Redis for every worker.
import { AppError } from "../../errors.js";
import type { Runtime } from "../runtime.js";
import { requester } from "../requester.js";

export async function killSwitchCommand(rt: Runtime, action: string): Promise<number> {
  if (action === "on" || action === "off") {
    await rt.killSwitch.set(action === "on", requester());
  } else if (action !== "status") {
    throw new AppError("invalid_input", `killswitch takes on, off or status (got "${action}")`);
  }
  process.stdout.write(`${JSON.stringify(await rt.killSwitch.state())}\n`);
  return 0;
}
