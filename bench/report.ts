// What the benches print: percentiles and tables, and the entry point a bench file runs by.

import { loadavg } from 'node:os';
import { fileURLToPath } from 'node:url';

/** The `p`-th percentile of ascending `sorted` (NaN when empty). */
export const pct = (sorted: readonly number[], p: number): number => sorted[Math.min(sorted.length - 1, Math.floor((sorted.length * p) / 100))] ?? Number.NaN;

/** The middle of `xs`, the upper one of two when their count is even (NaN when empty). */
export const median = (xs: readonly number[]): number => [...xs].sort((a, b) => a - b)[Math.floor(xs.length / 2)] ?? Number.NaN;

/** The run whose `value` is the median of all (as `median` picks it). */
export const medianRun = <T>(runs: readonly T[], value: (run: T) => number): T => [...runs].sort((a, b) => value(a) - value(b))[Math.floor(runs.length / 2)]!;

/** A rate as the tables print it: a whole number with thousands separators. */
export const rate = (n: number): string => Math.round(n).toLocaleString('en-US');

/** The range of several runs' rates, `min–max` (empty for one run). */
export const spread = (xs: readonly number[]): string => (xs.length > 1 ? `${rate(Math.min(...xs))}–${rate(Math.max(...xs))}` : '');

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

/** BENCH_QUIET_LOAD: before each timed run, wait until the 1-minute load average is below it. */
const QUIET_LOAD = Number(process.env.BENCH_QUIET_LOAD ?? Number.NaN);
/** the longest wait for it, per run (BENCH_QUIET_WAIT_MS, default 5 minutes) */
const QUIET_WAIT_MS = Number(process.env.BENCH_QUIET_WAIT_MS ?? 300_000);

/**
 * The machine's 1-minute load average before a run: with BENCH_QUIET_LOAD set, first waits (at
 * most BENCH_QUIET_WAIT_MS) until it is below that, so ratios against an anchor such as rsyslog,
 * whose threads gain most from idle cores, are taken on a quiet machine. The load is returned
 * either way, to be printed beside the figures.
 */
export async function quietLoad(): Promise<number> {
  const deadline = Date.now() + QUIET_WAIT_MS;
  while (Number.isFinite(QUIET_LOAD) && loadavg()[0]! >= QUIET_LOAD && Date.now() < deadline) await new Promise((resolve) => setTimeout(resolve, 2000));
  return loadavg()[0]!;
}

/** `0.31–0.48` of the loads seen before runs. */
export const loadRange = (loads: readonly number[]): string => (loads.length === 0 ? '–' : `${Math.min(...loads).toFixed(2)}–${Math.max(...loads).toFixed(2)}`);
