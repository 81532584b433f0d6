// pi's `--mode json`: `session`, `turn_start` / `turn_end`, `message_start` / `message_update` / `message_end`
// (an assistant message's end carries its text, usage and any error), `tool_execution_start` / `_end`, `agent_end`.
// Its shell tool is `bash`, not `Bash`: Sandcastle 0.12.0's own reading of pi drops every tool call.
import { arr, headLine, jsonLine, num, obj, shortArgs, str, textOf, usage, type OutputItem, type OutputReader } from "./output-item.js";

export function piReader(): OutputReader {
  return (line) => {
    const event = jsonLine(line);
    if (event === undefined) return line.trim().length > 0 ? [{ kind: "text", text: line }] : [];
    const items: OutputItem[] = [];
    switch (event.type) {
      case "tool_execution_start":
        items.push({ kind: "tool", name: str(event.toolName) ?? "tool", args: shortArgs(event.args) });
        break;
      case "tool_execution_end":
        items.push({ kind: "tool_result", text: headLine(textOf(obj(event.result).content)) || "(no output)", error: event.isError === true });
        break;
      case "message_end": {
        const message = obj(event.message);
        if (message.role !== "assistant") break;
        const text = textOf(message.content);
        if (text.trim()) items.push({ kind: "text", text });
        const u = obj(message.usage);
        items.push(
          usage({
            input_tokens: num(u.input),
            output_tokens: num(u.output),
            cache_read_input_tokens: num(u.cacheRead),
            cache_creation_input_tokens: num(u.cacheWrite),
          }),
        );
        if (message.stopReason === "error") items.push(errorItem(str(message.errorMessage) ?? "the model request failed"));
        break;
      }
      case "turn_end":
        items.push(usage({ turns: 1 }));
        break;
      case "agent_end": {
        const last = arr(event.messages).map(obj).filter((m) => m.role === "assistant").pop();
        items.push({ kind: "result", text: last?.stopReason === "error" ? "ended with an error" : "ended" });
        break;
      }
      case "agent_error":
      case "error":
        items.push(errorItem(str(event.message) ?? str(obj(event.error).message) ?? "error"));
        break;
    }
    return items;
  };
}

/** pi's error messages start with the status the SDK saw ("401 {…}", "529 Overloaded"). */
function errorItem(message: string): OutputItem {
  const status = /^(\d{3})\b/.exec(message.trim())?.[1] ?? /\bstatus(?: code)?:? (\d{3})\b/i.exec(message)?.[1];
  return { kind: "error", text: headLine(message), ...(status !== undefined ? { status: Number(status) } : {}) };
}
