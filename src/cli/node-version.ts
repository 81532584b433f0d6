// Whether this Node can run the program. The program needs Node 22.13 or later (node:sqlite without a flag keeps
// the audit chain's head); an older Node would stop at the first import with ERR_UNKNOWN_BUILTIN_MODULE and a
// stack trace. main.ts asks here before importing anything else, and says it in one line.

/** `engines.node` as this package writes it: `>=MAJOR.MINOR[.PATCH]`; null for any other form. */
export function minimumNode(engines: string): readonly [number, number, number] | null {
  const m = /^\s*>=\s*v?(\d+)(?:\.(\d+))?(?:\.(\d+))?\s*$/.exec(engines);
  return m ? [Number(m[1]), Number(m[2] ?? 0), Number(m[3] ?? 0)] : null;
}

/** The one line that refuses an older Node (naming the one it needs and the one that ran), or null when it will do. */
export function nodeRefusal(running: string, engines: string, execPath: string): string | null {
  const need = minimumNode(engines);
  if (need === null) return null;
  const have = running.replace(/^v/, "").split(".").map((n) => Number.parseInt(n, 10) || 0);
  for (let i = 0; i < 3; i++) {
    const h = have[i] ?? 0;
    const n = need[i]!;
    if (h > n) return null;
    if (h < n) {
      const wanted = need[2] === 0 ? `${need[0]}.${need[1]}` : need.join(".");
      return `needs Node ${wanted} or later, and this is Node ${running.replace(/^v/, "")} (${execPath}): put a newer node first on PATH (in a checkout of sandcastle-queue, \`. scripts/node24.sh\` does)`;
    }
  }
  return null;
}
