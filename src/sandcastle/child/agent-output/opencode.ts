// opencode's `run --format json`: `step_start`, `tool_use` (a call once it completed or failed: its input and
// output), `text`, `step_finish` (the step's tokens), `error`.
import { headLine, jsonLine, num, obj, shortArgs, str, usage, type OutputItem, type OutputReader } from "./output-item.js";

export function opencodeReader(): OutputReader {
  return (line) => {
    const event = jsonLine(line);
    if (event === undefined) return line.trim().length > 0 ? [{ kind: "text", text: line }] : [];
    const part = obj(event.part);
    const items: OutputItem[] = [];
    switch (event.type) {
      case "tool_use": {
        const state = obj(part.state);
        items.push({ kind: "tool", name: str(part.tool) ?? "tool", args: shortArgs(state.input) });
        const failed = state.status === "error" || (typeof obj(state.metadata).exit === "number" && obj(state.metadata).exit !== 0);
        items.push({ kind: "tool_result", text: headLine(str(state.output) ?? str(state.error) ?? "") || "(no output)", error: failed });
        break;
      }
      case "text":
        if (str(part.text)?.trim()) items.push({ kind: "text", text: str(part.text)! });
        break;
      case "step_finish": {
        const tokens = obj(part.tokens);
        const cache = obj(tokens.cache);
        items.push(
          usage({
            input_tokens: num(tokens.input),
            output_tokens: num(tokens.output) + num(tokens.reasoning),
            cache_read_input_tokens: num(cache.read),
            cache_creation_input_tokens: num(cache.write),
            turns: 1,
          }),
        );
        if (part.reason !== "tool-calls") items.push({ kind: "result", text: `ended (${str(part.reason) ?? "stop"})` });
        break;
      }
      case "error": {
        const error = obj(event.error);
        const data = obj(error.data);
        const message = str(data.message) ?? str(error.message) ?? str(error.name) ?? "error";
        const status = num(data.statusCode) || undefined;
        items.push({ kind: "error", text: headLine(message), ...(status ? { status } : {}) });
        break;
      }
    }
    return items;
  };
}
