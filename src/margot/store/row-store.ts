// A durable JSONL file of one kind of row (the Margot ledger, research follow-ups): each row validated
// against its schema and stamped with `ts`, appended whole even with several writer processes, and on
// disk before `append` resolves (audit/jsonl-appender.ts), so a job is never marked done before its row.
import { z } from "zod";
import { JsonlAppender } from "../../audit/jsonl-appender.js";
import { isoTime } from "../../iso-time.js";

/** A row's schema: an object whose `ts` the store sets. */
type RowSchema = z.ZodType<{ ts: string }>;

/** The schema of a row: `ts` (set by the store) and the given fields, no others. */
export function rowSchema<Fields extends z.ZodRawShape>(fields: Fields) {
  return z.object({ ts: z.iso.datetime({ offset: true }), ...fields }).strict();
}

export class RowStore<Schema extends RowSchema> {
  private readonly appender: JsonlAppender;

  constructor(
    readonly path: string,
    private readonly schema: Schema,
  ) {
    this.appender = new JsonlAppender(path);
  }

  /** Validates and appends one row, stamped `now`; rejects when the row is invalid or the disk refuses it. */
  async append(entry: Omit<z.input<Schema>, "ts">, now = Date.now()): Promise<z.output<Schema>> {
    const row = this.schema.parse({ ts: isoTime(now), ...withoutUndefined(entry) });
    await this.appender.append(row);
    return row;
  }

  close(): Promise<void> {
    return this.appender.close();
  }
}

/** The fields that are set: an optional field left undefined is absent from the row, not null. */
function withoutUndefined(value: object): object {
  return Object.fromEntries(Object.entries(value).filter(([, v]) => v !== undefined));
}

/** The store of one kind of row, opened on a path: `class MargotLedger extends rowStoreOf(LedgerRow) {}`. */
export function rowStoreOf<Schema extends RowSchema>(schema: Schema): new (path: string) => RowStore<Schema> {
  return class extends RowStore<Schema> {
    constructor(path: string) {
      super(path, schema);
    }
  };
}
