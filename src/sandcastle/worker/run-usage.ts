// A run's token usage as its child reports it (usage records: deltas per phase), and its budget: the
// request's token_budget, else SANDCASTLE_TOKEN_BUDGET. The budget counts every token an agent reported —
// input, output, cache reads and writes — since each is a token the endpoint processed (ADR 0034).
import type { RunUsage } from "../contract.js";
import type { UsageRecord } from "../protocol.js";

export class UsageMeter {
  private sum: RunUsage | null = null;

  add(record: UsageRecord): void {
    const s = this.sum ?? { input_tokens: 0, output_tokens: 0, cache_read_input_tokens: 0, cache_creation_input_tokens: 0, turns: 0 };
    this.sum = {
      input_tokens: s.input_tokens + record.input_tokens,
      output_tokens: s.output_tokens + record.output_tokens,
      cache_read_input_tokens: s.cache_read_input_tokens + record.cache_read_input_tokens,
      cache_creation_input_tokens: s.cache_creation_input_tokens + record.cache_creation_input_tokens,
      turns: s.turns + record.turns,
    };
  }

  /** null until the first record: an agent that reports nothing has no usage, not zero. */
  get usage(): RunUsage | null {
    return this.sum;
  }

  /** What the budget counts. */
  get tokens(): number {
    const s = this.sum;
    return s === null ? 0 : s.input_tokens + s.output_tokens + s.cache_read_input_tokens + s.cache_creation_input_tokens;
  }
}
