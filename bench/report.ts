/** A benchmark figure beside its budget (the budgets are in the README's benchmark table). */
export interface BudgetRow {
  figure: string;
  unit: string;
  measured: number | null;
  budget: string;
  /** Absent for figures that are reported without a budget. */
  ok?: (measured: number) => boolean;
  samples: number;
  /** The figure before the latest change (docs/cost-per-call.md), shown beside it when given. */
  previous?: string;
}

/** Nearest-rank percentile (p in 0..100); null without samples. */
export function percentile(values: readonly number[], p: number): number | null {
  if (values.length === 0) return null;
  const sorted = values.slice().sort((a, b) => a - b);
  const rank = Math.max(1, Math.ceil((p / 100) * sorted.length));
  return sorted[Math.min(rank, sorted.length) - 1]!;
}

export function formatTable(rows: readonly BudgetRow[]): string {
  const withPrevious = rows.some((row) => row.previous !== undefined);
  const lines = rows.map((row) => {
    const measured =
      row.measured === null ? 'n/a' : `${Math.round(row.measured * 10) / 10}${row.unit ? ` ${row.unit}` : ''}`;
    const verdict = !row.ok || row.measured === null ? '' : row.ok(row.measured) ? 'within budget' : 'OVER BUDGET';
    return [
      row.figure,
      measured,
      row.budget,
      ...(withPrevious ? [row.previous ?? ''] : []),
      `n=${row.samples}`,
      verdict,
    ];
  });
  const header = ['figure', 'measured', 'budget', ...(withPrevious ? ['previous'] : []), 'samples', ''];
  const widths = header.map((h, i) => Math.max(h.length, ...lines.map((l) => l[i]!.length)));
  const format = (cells: string[]) =>
    cells
      .map((c, i) => c.padEnd(widths[i]!))
      .join('  ')
      .trimEnd();
  return [format(header), format(widths.map((w) => '-'.repeat(w))), ...lines.map(format)].join('\n');
}
