// claude's `--output-format stream-json --verbose`: `system` (init, api_retry), `assistant` (text and tool_use
// blocks, the message's usage as it started), `user` (tool_result blocks), and `result` (how it ended, its turns
// and the session's token totals). Live usage counts each message's input side once; the result's totals then
// top it up, so the sum is claude's own.
import { arr, headLine, jsonLine, num, obj, shortArgs, str, textOf, usage, type OutputItem, type OutputReader } from "./output-item.js";

export function claudeReader(): OutputReader {
  const seen = new Set<string>();
  const sum = { input_tokens: 0, output_tokens: 0, cache_read_input_tokens: 0, cache_creation_input_tokens: 0, turns: 0 };
  const add = (delta: Partial<typeof sum>): OutputItem => {
    for (const [k, v] of Object.entries(delta) as Array<[keyof typeof sum, number]>) sum[k] += v;
    return usage(delta);
  };
  return (line) => {
    const event = jsonLine(line);
    if (event === undefined) return line.trim().length > 0 ? [{ kind: "text", text: line }] : [];
    const items: OutputItem[] = [];
    switch (event.type) {
      case "system": {
        if (event.subtype === "api_retry") {
          const status = num(event.error_status) || undefined;
          items.push({
            kind: "error",
            text: `model request failed${status ? ` (${status})` : ""}: ${str(event.error) ?? "error"}; retry ${num(event.attempt)}/${num(event.max_retries)}`,
            ...(status ? { status } : {}),
          });
        }
        break;
      }
      case "assistant": {
        const message = obj(event.message);
        for (const block of arr(message.content)) {
          const b = obj(block);
          if (b.type === "text" && str(b.text)?.trim()) items.push({ kind: "text", text: str(b.text)! });
          else if (b.type === "tool_use") items.push({ kind: "tool", name: str(b.name) ?? "tool", args: shortArgs(b.input) });
        }
        const id = str(message.id);
        if (id !== undefined && !seen.has(id) && message.model !== "<synthetic>") {
          seen.add(id);
          const u = obj(message.usage);
          items.push(
            add({
              input_tokens: num(u.input_tokens),
              cache_read_input_tokens: num(u.cache_read_input_tokens),
              cache_creation_input_tokens: num(u.cache_creation_input_tokens),
            }),
          );
        }
        break;
      }
      case "user": {
        for (const block of arr(obj(event.message).content)) {
          const b = obj(block);
          if (b.type === "tool_result") items.push({ kind: "tool_result", text: headLine(textOf(b.content)) || "(no output)", error: b.is_error === true });
        }
        break;
      }
      case "result": {
        const u = obj(event.usage);
        const top = (total: number, so: number) => Math.max(0, total - so);
        const delta = {
          input_tokens: top(num(u.input_tokens), sum.input_tokens),
          output_tokens: top(num(u.output_tokens), sum.output_tokens),
          cache_read_input_tokens: top(num(u.cache_read_input_tokens), sum.cache_read_input_tokens),
          cache_creation_input_tokens: top(num(u.cache_creation_input_tokens), sum.cache_creation_input_tokens),
          turns: top(num(event.num_turns), sum.turns),
        };
        if (Object.values(delta).some((v) => v > 0)) items.push(add(delta));
        const status = num(event.api_error_status) || undefined;
        if (event.is_error === true)
          items.push({ kind: "error", text: headLine(str(event.result) ?? str(event.subtype) ?? "error"), ...(status ? { status } : {}) });
        items.push({ kind: "result", text: `${str(event.subtype) ?? "ended"} after ${num(event.num_turns)} turn(s)` });
        break;
      }
    }
    return items;
  };
}
