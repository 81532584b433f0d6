// codex's `exec --json`: `thread.started`, `turn.started`, items (`command_execution` started and completed,
// `agent_message`, `file_change`, `error`), `turn.completed` with the turn's usage, `turn.failed`, `error`.
// Its input tokens include the cached ones; they are told apart here as the other agents report them.
import { arr, headLine, jsonLine, num, obj, short, shortArgs, str, usage, type OutputItem, type OutputReader } from "./output-item.js";

/** codex runs every command through a login shell (`/bin/sh -lc '…'` or `"…"`): the command itself is what a person reads. */
export function unwrap(command: string): string {
  const match = /^\/bin\/(?:ba)?sh -lc (['"])([\s\S]*)\1$/.exec(command);
  if (match?.[2] === undefined) return command;
  return match[1] === "'" ? match[2].replace(/'\\''/g, "'") : match[2].replace(/\\(["\\$`])/g, "$1");
}

/** Noise codex prints as an error item about a model it has no metadata for (a gateway's model name). */
const HARMLESS = /^Model metadata for .* not found/;

export function codexReader(): OutputReader {
  return (line) => {
    const event = jsonLine(line);
    if (event === undefined) return line.trim().length > 0 ? [{ kind: "text", text: line }] : [];
    const item = obj(event.item);
    const items: OutputItem[] = [];
    switch (event.type) {
      case "item.started":
        if (item.type === "command_execution") items.push({ kind: "tool", name: "shell", args: short(unwrap(str(item.command) ?? "")) });
        break;
      case "item.completed":
        if (item.type === "command_execution") {
          const exit = typeof item.exit_code === "number" ? item.exit_code : null;
          items.push({ kind: "tool_result", text: headLine(str(item.aggregated_output) ?? "") || `exit ${exit ?? "?"}`, error: exit !== 0 });
        } else if (item.type === "agent_message" && str(item.text)?.trim()) items.push({ kind: "text", text: str(item.text)! });
        else if (item.type === "file_change")
          items.push({
            kind: "tool",
            name: "apply_patch",
            args: shortArgs(
              arr(item.changes)
                .map((c) => str(obj(c).path) ?? "")
                .join(" "),
            ),
          });
        else if (item.type === "error" && !HARMLESS.test(str(item.message) ?? "")) items.push(errorItem(str(item.message) ?? "error"));
        break;
      case "turn.completed": {
        const u = obj(event.usage);
        const cached = num(u.cached_input_tokens);
        items.push(
          usage({
            input_tokens: Math.max(0, num(u.input_tokens) - cached),
            output_tokens: num(u.output_tokens),
            cache_read_input_tokens: cached,
            cache_creation_input_tokens: num(u.cache_write_input_tokens),
            turns: 1,
          }),
        );
        items.push({ kind: "result", text: "turn completed" });
        break;
      }
      case "turn.failed":
        items.push(errorItem(str(obj(event.error).message) ?? "turn failed"));
        break;
      case "error":
        items.push(errorItem(str(event.message) ?? "error"));
        break;
    }
    return items;
  };
}

/** codex says the status in its message ("unexpected status 401 Unauthorized: …"). */
function errorItem(message: string): OutputItem {
  const status = /\b(?:status|HTTP)\s*:?\s*(\d{3})\b/i.exec(message)?.[1];
  return { kind: "error", text: headLine(message), ...(status !== undefined ? { status: Number(status) } : {}) };
}
