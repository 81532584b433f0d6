export function percentile(values: readonly number[], p: number): number {
  if (values.length === 0) return Number.NaN;
  const sorted = [...values].sort((a, b) => a - b);
  const idx = Math.min(sorted.length - 1, Math.max(0, Math.ceil((p / 100) * sorted.length) - 1));
  return sorted[idx]!;
}

export const median = (values: readonly number[]) => percentile(values, 50);
export const round = (n: number, digits = 2) => Math.round(n * 10 ** digits) / 10 ** digits;

/**
 * Runs baseline and measured alternately (b, m, b, m, …) and returns both series and the median of each
 * pair's ratio m/b: a noisy neighbour slows both sides of a pair rather than one phase of the bench.
 */
export async function alternatePairs(
  reps: number,
  baseline: (rep: number) => Promise<number>,
  measured: (rep: number) => Promise<number>,
): Promise<{ baseline: number[]; measured: number[]; ratios: number[]; ratio: number }> {
  const b: number[] = [];
  const m: number[] = [];
  for (let r = 0; r < reps; r++) {
    b.push(await baseline(r));
    m.push(await measured(r));
  }
  const ratios = m.map((v, i) => v / b[i]!);
  return { baseline: b, measured: m, ratios: ratios.map((x) => round(x)), ratio: round(median(ratios)) };
}

/** What a paired bench whose ratio should reach a goal reports: both medians under their names, the ratio, each pair's, the goal. */
export function pairReport(
  pairs: { baseline: number[]; measured: number[]; ratios: number[]; ratio: number },
  names: { measured: string; baseline: string },
  goalRatio: number,
): Record<string, unknown> {
  return {
    [names.measured]: Math.round(median(pairs.measured)),
    [names.baseline]: Math.round(median(pairs.baseline)),
    ratio: pairs.ratio,
    pair_ratios: pairs.ratios,
    goal_ratio: goalRatio,
    meets_ratio: pairs.ratio >= goalRatio,
  };
}
