// The audit trail (AUDIT_LOG_PATH): validated rows from the closed event set, redacted, one whole line each,
// hash-chained so an edit shows (chain.ts, ADR 0019).
import { AuditUnwritableError } from "../errors.js";
import { formatIssues } from "../invalid-input.js";
import { redactStrings, stringsIn, type Redactor } from "../redact/index.js";
import { isoTime } from "../iso-time.js";
import { AuditEvent } from "./events.js";
import { ChainedLog } from "./chain.js";

interface PendingRow {
  readonly row: Record<string, unknown>;
  resolve(): void;
  reject(err: unknown): void;
}

export class AuditLog {
  private readonly log: ChainedLog;
  private pending: PendingRow[] = [];
  private scheduled = false;

  constructor(
    path: string,
    private readonly redactor: Redactor,
  ) {
    this.log = new ChainedLog(path);
  }

  get path(): string {
    return this.log.path;
  }

  /**
   * Writes one row; `extraRedactor` adds the secret values known for one run. Resolves once the row is
   * in the file: rows emitted in the same turn of the event loop (by concurrent jobs) share one chain turn.
   */
  emit(event: AuditEvent, extraRedactor?: Redactor): Promise<void> {
    const parsed = AuditEvent.safeParse(event);
    if (!parsed.success) return Promise.reject(new Error(`audit row ${event.type} is invalid: ${formatIssues(parsed.error)}`));
    const fields: Record<string, unknown> = { ts: isoTime(), ...parsed.data };
    // Most rows hold no hint of a secret in any string: one test of them all, instead of one redaction per string.
    const strings = stringsIn(fields, []).join("\n");
    const clean = !this.redactor.mayRedact(strings) && !(extraRedactor?.mayRedact(strings) ?? false);
    const redact = (text: string) => (extraRedactor ? extraRedactor.line(this.redactor.line(text)) : this.redactor.line(text));
    const row = clean ? fields : (redactStrings(fields, redact) as Record<string, unknown>);
    return new Promise<void>((resolve, reject) => {
      this.pending.push({ row, resolve, reject });
      if (!this.scheduled) {
        this.scheduled = true;
        setImmediate(() => this.flush());
      }
    });
  }

  private flush(): void {
    this.scheduled = false;
    const batch = this.pending.splice(0);
    try {
      this.log.appendAll(batch.map((p) => p.row));
    } catch (err) {
      const error = new AuditUnwritableError(this.path, err);
      for (const p of batch) p.reject(error);
      return;
    }
    for (const p of batch) p.resolve();
  }

  async close(): Promise<void> {
    this.flush();
    this.log.close();
  }
}
