// `audit verify [PATH...]`: check the audit log's hash chain (ADR 0019); exit 1 naming the first broken row.
import { readFile } from "node:fs/promises";
import { resolve } from "node:path";
import { readHead } from "../../audit/chain.js";
import { verifyAudit, type AuditFile } from "../../audit/verify.js";
import { loadConfig } from "../../config.js";
import { AppError } from "../../errors.js";

export async function auditVerifyCommand(paths: readonly string[], opts: { json?: boolean }): Promise<number> {
  const files = paths.length > 0 ? paths.map((p) => resolve(p)) : [loadConfig().AUDIT_LOG_PATH];
  const read: AuditFile[] = [];
  for (const path of files) {
    try {
      read.push({ path, text: await readFile(path, "utf8") });
    } catch (err) {
      throw new AppError("invalid_input", `cannot read audit file ${path}: ${(err as NodeJS.ErrnoException).code ?? (err as Error).message}`);
    }
  }
  // The head is kept beside the file written to (AUDIT_LOG_PATH); a rotated file has none of its own.
  const report = verifyAudit(read, readHead(files.at(-1) as string));
  if (opts.json) {
    process.stdout.write(`${JSON.stringify(report)}\n`);
  } else {
    for (const note of report.notes) process.stdout.write(`note: ${note}\n`);
    if (report.problem) process.stdout.write(`BROKEN: ${report.problem.path}: ${report.problem.message}\n`);
    else process.stdout.write(`ok: ${report.rows} rows, chain intact\n`);
  }
  return report.ok ? 0 : 1;
}
