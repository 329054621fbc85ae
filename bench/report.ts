// What the benches print: percentiles and tables, and the entry point a bench file runs by.

import { fileURLToPath } from 'node:url';

/** The `p`-th percentile of ascending `sorted` (NaN when empty). */
export const pct = (sorted: readonly number[], p: number): number => sorted[Math.min(sorted.length - 1, Math.floor((sorted.length * p) / 100))] ?? Number.NaN;

const columnWidths = (head: readonly string[], rows: readonly (readonly string[])[]): number[] =>
  head.map((h, i) => Math.max(h.length, ...rows.map((r) => r[i]!.length)));

/** A plain-text table: the first column left-aligned, the others right-aligned, a dashed rule under the head. */
export function textTable(head: readonly string[], rows: readonly (readonly string[])[]): string {
  const widths = columnWidths(head, rows);
  const line = (cells: readonly string[]) => cells.map((c, i) => (i === 0 ? c.padEnd(widths[i]!) : c.padStart(widths[i]!))).join('  ');
  return [line(head), line(widths.map((w) => '-'.repeat(w))), ...rows.map(line)].join('\n');
}

/**
 * A Markdown table; with `alignRight` every column but the first is right-aligned (and marked so
 * in the rule), otherwise all are left-aligned.
 */
export function markdownTable(head: readonly string[], rows: readonly (readonly string[])[], alignRight = false): string {
  const widths = columnWidths(head, rows);
  const right = (i: number) => alignRight && i > 0;
  const line = (cells: readonly string[]) => `| ${cells.map((c, i) => (right(i) ? c.padStart(widths[i]!) : c.padEnd(widths[i]!))).join(' | ')} |`;
  const rule = `|${widths.map((w, i) => (right(i) ? `${'-'.repeat(w + 1)}:` : '-'.repeat(w + 2))).join('|')}|`;
  return [line(head), rule, ...rows.map(line)].join('\n');
}

/**
 * Runs `main` when the module at `moduleUrl` is the script node was started with: a failure exits
 * 1 with its stack; with `exitWhenDone`, success exits 0 (for benches that leave handles open).
 */
export function runIfMain(moduleUrl: string, main: () => Promise<unknown>, opts: { readonly exitWhenDone?: boolean } = {}): void {
  if (process.argv[1] !== fileURLToPath(moduleUrl)) return;
  main().then(
    () => {
      if (opts.exitWhenDone) process.exit(0);
    },
    (err: unknown) => {
      process.stderr.write(`${err instanceof Error ? err.stack : String(err)}\n`);
      process.exit(1);
    },
  );
}
