// The benches of issue 40 (DESIGN.md §25) print what an operator compares, checked on small runs
// (speed is never asserted: the figures are bench/'s, quoted in docs/benchmarks.md): the
// compression bench's bytes on the wire and before compression, entries/s and their ratio to the
// plain hop, and both workers' peak RSS, for none, gzip and zstd on both inputs; the fleet bench's
// backlog, exactly once at the collector, against a plain hop in the same run, with the peak RSS
// of every process.

import { execFile } from 'node:child_process';
import { fileURLToPath } from 'node:url';
import test from 'ava';
import { hasZstd } from '../../src/chain/compression.js';

const bench = (name: string): string => fileURLToPath(new URL(`../../bench/${name}.js`, import.meta.url));

/** Runs a bench script with `env`; its standard output (the tables). */
function runBench(name: string, env: Record<string, string>): Promise<string> {
  return new Promise((resolve, reject) => {
    execFile(process.execPath, [bench(name)], { env: { ...process.env, ...env }, timeout: 150_000, maxBuffer: 16 * 1024 * 1024 }, (err, stdout, stderr) => {
      if (err) reject(new Error(`${name}: ${err.message}\n${stderr.slice(-4000)}`));
      else resolve(stdout);
    });
  });
}

/** The rows of the markdown table whose header holds `first` as its first cell: cells by header. */
function markdownRows(out: string, first: string): Record<string, string>[] {
  const lines = out.split('\n').filter((l) => l.startsWith('|'));
  const cells = (l: string) => l.split('|').slice(1, -1).map((c) => c.trim());
  const at = lines.findIndex((l) => cells(l)[0] === first);
  if (at < 0) return [];
  const header = cells(lines[at]!);
  return lines.slice(at + 2).map((l) => Object.fromEntries(cells(l).map((c, i) => [header[i]!, c])));
}

const num = (s: string | undefined): number => Number((s ?? '').replace(/,/g, ''));

test.serial('bench/compression: per input and codec, wire and raw bytes per entry, entries/s and their ratio to plain, both workers peak RSS', async (t) => {
  t.timeout(180_000);
  const out = await runBench('compression', { BENCH_LINES: '20000', BENCH_LEVELS: '0' });
  const rows = markdownRows(out, 'input');
  for (const input of ['bench input (200 B lines)', 'CRI JSON lines']) {
    for (const codec of ['none', 'gzip', 'zstd']) {
      const row = rows.find((r) => r.input === input && r.compression === codec);
      if (!row) {
        t.fail(`no row for ${input} ${codec}:\n${out}`);
        continue;
      }
      if (codec === 'zstd' && !hasZstd()) {
        t.regex(row['entries/s']!, new RegExp(`^n/a: Node\\.js ${process.version.replace(/\./g, '\\.')} has no zstd`));
        continue;
      }
      t.true(num(row['entries/s']) > 0, `${input} ${codec}: entries/s`);
      const wire = num(row['wire B/entry']);
      const raw = num(row['raw B/entry']);
      t.true(raw > 200, `${input} ${codec}: raw bytes per entry (${raw}), each line as framed`);
      // the ratio is printed from the byte counts, the per-entry columns rounded to 0.1 byte
      t.true(Math.abs(num(row['wire ÷ raw']) - wire / raw) <= 0.002, `${input} ${codec}: ${row['wire ÷ raw']} against ${wire} / ${raw}`);
      // the bytes are the codec's, not the machine's: its goal holds in every run (the speed is bench/'s)
      if (codec === 'none') t.is(wire, raw);
      else t.true(wire / raw <= (codec === 'gzip' ? 0.2 : 0.15), `${input} ${codec}: ${wire} of ${raw} bytes`);
      t.true(num(row['× plain entries/s']) > 0);
      t.regex(row['worker CPU µs/entry (sender + receiver)']!, /^\d+\.\d\d \(\d+\.\d\d \+ \d+\.\d\d\)$/);
      t.true(num(row['sender RSS MiB']) > 20 && num(row['receiver RSS MiB']) > 20, `${input} ${codec}: peak RSS of both workers`);
    }
  }
});

test.serial('bench/fleet: the backlog through the shipped balance edges, exactly once, against a plain hop in the same run, with every process peak RSS', async (t) => {
  t.timeout(180_000);
  const lines = 20_000;
  const out = await runBench('fleet', { BENCH_BACKLOG_ONLY: '1', BENCH_BACKLOG: String(lines), BENCH_RUNS: '1', BENCH_LINES: '20000' });
  t.regex(out, /plain tcp_chain hop \(bench\/chain\.js, 20,000 lines of 200 B, a run after each fleet run\): median \d+ lines\/s/);
  t.regex(out, /fleet \/ hop: \d+\.\d\d × \(medians; each run's pair: \d+\.\d\d ×\)/);
  // the backlog run: every line once at the collector, and once in its file
  const header = out.split('\n').findIndex((l) => l.startsWith('run  lines  unique at collector  lines in the collector'));
  t.true(header >= 0, out);
  const run = out.split('\n')[header + 1]!.trim().split(/\s+/).map(Number);
  t.deepEqual(run.slice(0, 4), [1, lines, lines, lines], 'run, lines, unique at the collector, lines in its file');
  t.true(run[4]! >= lines, 'the relays handed the collector every line');
  // peak RSS of every process of the fleet
  const rss = new Map<string, number>();
  for (const l of out.split('\n')) {
    const m = /^\s*((?:collector|relay-a|relay-b|edge) (?:primary|worker \d+))\s+[\d.]+\s+\d+ %\s+[\d.]+\s+([\d.]+)\s*$/.exec(l);
    if (m) rss.set(m[1]!, Number(m[2]));
  }
  for (const node of ['collector', 'relay-a', 'relay-b', 'edge']) {
    t.true((rss.get(`${node} primary`) ?? 0) > 20, `${node} primary peak RSS`);
    t.true((rss.get(`${node} worker 1`) ?? 0) > 20, `${node} worker peak RSS`);
  }
});
