// `audit verify`: walk the hash chain of one or more audit files (oldest first) and name the first row
// that was changed, removed or reordered; the live file's last row is checked against the chain head.
import { GENESIS, rowHash, type ChainHead } from "./chain.js";

export interface AuditFile {
  readonly path: string;
  readonly text: string;
}

export type ProblemKind = "changed" | "removed" | "reordered" | "truncated" | "not_chained";

export interface VerifyReport {
  readonly ok: boolean;
  readonly rows: number;
  /** The first break, naming a file and a 1-based line. */
  readonly problem: { readonly kind: ProblemKind; readonly path: string; readonly line: number; readonly message: string } | null;
  /** Not failures: where the chain starts, torn writes of crashed writers. */
  readonly notes: readonly string[];
  /** The last row read: what to copy somewhere safe to catch a rewrite of the whole chain. */
  readonly last: ChainHead | null;
}

interface Row {
  readonly path: string;
  readonly line: number;
  readonly text: string;
  readonly seq: number;
  readonly prev: string;
}

/** `head`: the chain head recorded beside the last file (null: not checked, e.g. a rotated file). */
export function verifyAudit(files: readonly AuditFile[], head: ChainHead | null): VerifyReport {
  const notes: string[] = [];
  let last: Row | null = null;
  let torn: { path: string; line: number } | null = null;
  let rows = 0;
  const lastSeen = (): ChainHead | null => (last === null ? null : { seq: last.seq, hash: rowHash(last.text) });
  const fail = (kind: ProblemKind, path: string, line: number, message: string): VerifyReport => ({
    ok: false,
    rows,
    problem: { kind, path, line, message },
    notes,
    last: lastSeen(),
  });

  for (const file of files) {
    const lines = file.text.split("\n");
    if (lines.at(-1) === "") lines.pop();
    for (let i = 0; i < lines.length; i++) {
      const text = lines[i] as string;
      const at = i + 1;
      const row = parseRow(file.path, at, text);
      if (row === null) {
        // A writer killed mid-row leaves a torn line that the next row chains past; anything else is an edit.
        if (torn === null && !text.trimEnd().endsWith("}")) {
          torn = { path: file.path, line: at };
          continue;
        }
        return fail("changed", file.path, at, `line ${at} is not an audit row with seq and prev: it was changed`);
      }
      if (last === null) {
        if (row.seq === 1 && row.prev !== GENESIS) return fail("changed", file.path, at, `line ${at} (seq 1) does not start the chain: it was changed`);
        if (row.seq !== 1) notes.push(`${file.path} starts at seq ${row.seq}: it continues an earlier file (give that file first to check the link)`);
      } else {
        const where = `${file.path === last.path ? "" : `${last.path} `}line ${last.line}`;
        if (row.seq <= last.seq)
          return fail("reordered", file.path, at, `line ${at} (seq ${row.seq}) comes after seq ${last.seq} (${where}): rows were reordered or duplicated`);
        if (row.seq > last.seq + 1) {
          const gap = row.seq === last.seq + 2 ? `row seq ${last.seq + 1} was` : `rows seq ${last.seq + 1}–${row.seq - 1} were`;
          return fail("removed", file.path, at, `${gap} removed before line ${at} (after ${where})`);
        }
        if (row.prev !== rowHash(last.text))
          return fail(
            "changed",
            last.path,
            last.line,
            `line ${last.line} (seq ${last.seq}) no longer matches the hash that line ${at} of ${file.path} holds: it was changed`,
          );
        if (torn !== null) notes.push(`${torn.path} line ${torn.line} is a torn write (a writer stopped mid-row); the chain continues past it`);
      }
      torn = null;
      last = row;
      rows += 1;
    }
  }
  if (torn !== null) notes.push(`${torn.path} line ${torn.line} is a torn last line (a writer stopped mid-row)`);

  if (head !== null) {
    const lastPath = files.at(-1)?.path ?? "";
    const lastSeq = last?.seq ?? 0;
    if (head.seq > lastSeq) {
      const gap = head.seq === lastSeq + 1 ? `row seq ${head.seq} was` : `rows seq ${lastSeq + 1}–${head.seq} were`;
      return fail(
        "truncated",
        lastPath,
        (last?.path === lastPath ? last.line : 0) + 1,
        `${gap} removed from the end (the chain head says ${head.seq} rows were written)`,
      );
    }
    if (last !== null && head.seq < lastSeq)
      return fail(
        "not_chained",
        last.path,
        last.line,
        `line ${last.line} (seq ${last.seq}) is past the chain head (seq ${head.seq}): it was not written by sandcastle-queue`,
      );
    if (last !== null && rowHash(last.text) !== head.hash)
      return fail("changed", last.path, last.line, `line ${last.line} (seq ${last.seq}) does not match the chain head: it was changed`);
  }
  return { ok: true, rows, problem: null, notes, last: lastSeen() };
}

function parseRow(path: string, line: number, text: string): Row | null {
  try {
    const value = JSON.parse(text) as { seq?: unknown; prev?: unknown };
    if (typeof value !== "object" || value === null) return null;
    if (typeof value.seq !== "number" || !Number.isInteger(value.seq) || value.seq < 1) return null;
    if (typeof value.prev !== "string" || !/^[0-9a-f]{64}$/.test(value.prev)) return null;
    return { path, line, text, seq: value.seq, prev: value.prev };
  } catch {
    return null;
  }
}
