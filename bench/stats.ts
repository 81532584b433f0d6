export function percentile(values: readonly number[], p: number): number {
  if (values.length === 0) return Number.NaN;
  const sorted = [...values].sort((a, b) => a - b);
  const idx = Math.min(sorted.length - 1, Math.max(0, Math.ceil((p / 100) * sorted.length) - 1));
  return sorted[idx]!;
}

export const median = (values: readonly number[]) => percentile(values, 50);
export const round = (n: number, digits = 2) => Math.round(n * 10 ** digits) / 10 ** digits;
