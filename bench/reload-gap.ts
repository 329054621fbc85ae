// Reload handover: a file grows by one numbered line every 2 ms, a node tails it into its stdout
// sink, and this process stamps every line as it arrives. SIGHUP reloads the node RELOADS times,
// one second apart. Reported per reload: how long the reload took (SIGHUP → `Configuration
// reloaded` in the service log), the longest gap between consecutive delivered entries and the
// worst entry latency (arrival − append) from the SIGHUP to the next one; the same with no reload
// for comparison; then whether every line arrived exactly once. `node dist/bench/reload-gap.js`.

import { closeSync, openSync, writeSync } from 'node:fs';
import { join } from 'node:path';
import { type RunningNode, sleep, spawnNode, tempDir, waitFor } from '../test/helpers/node.js';
import { fileSourceToml, sinkToml } from '../test/helpers/toml.js';
import { runIfMain, textTable } from './report.js';

const RELOADS = Number(process.env.RELOADS ?? 10);
const APPEND_EVERY_MS = 2;
const RELOAD_SPACING_MS = 1000;
const BASELINE_MS = 2000;

interface Arrival {
  readonly n: number;
  /** performance.now() when the line arrived */
  readonly at: number;
}

/** Stamps every numbered line (`seq <n>`) the node writes to its stdout. */
function stampLines(node: RunningNode): Arrival[] {
  const arrivals: Arrival[] = [];
  let rest = '';
  node.child.stdout!.on('data', (chunk: string) => {
    const at = performance.now();
    const parts = (rest + chunk).split('\n');
    rest = parts.pop() ?? '';
    for (const p of parts) if (p.startsWith('seq ')) arrivals.push({ n: Number(p.slice(4)), at });
  });
  return arrivals;
}

/** Appends `seq <n>` lines, one per APPEND_EVERY_MS on schedule (a late timer appends the lines it owes). */
function startWriter(file: string) {
  const fd = openSync(file, 'a');
  const appendedAt: number[] = [0];
  const t0 = performance.now();
  const timer = setInterval(() => {
    const now = performance.now();
    const due = Math.floor((now - t0) / APPEND_EVERY_MS);
    let chunk = '';
    while (appendedAt.length <= due) {
      chunk += `seq ${appendedAt.length}\n`;
      appendedAt.push(now);
    }
    if (chunk) writeSync(fd, chunk);
  }, 1);
  return {
    appendedAt,
    stop(): number {
      clearInterval(timer);
      closeSync(fd);
      return appendedAt.length - 1;
    },
  };
}

interface Window {
  readonly name: string;
  readonly from: number;
  readonly to: number;
  /** SIGHUP → `Configuration reloaded`, ms */
  readonly reloadMs?: number;
}

interface WindowFigures {
  readonly gapMs: number;
  readonly latencyMs: number;
  readonly entries: number;
}

/** Longest gap between consecutive arrivals whose later one falls in [from, to), and the worst latency there. */
function measure(arrivals: readonly Arrival[], appendedAt: readonly number[], from: number, to: number): WindowFigures {
  let gapMs = 0;
  let latencyMs = 0;
  let entries = 0;
  for (let i = 1; i < arrivals.length; i++) {
    const a = arrivals[i]!;
    if (a.at < from || a.at >= to) continue;
    entries++;
    gapMs = Math.max(gapMs, a.at - arrivals[i - 1]!.at);
    latencyMs = Math.max(latencyMs, a.at - (appendedAt[a.n] ?? a.at));
  }
  return { gapMs, latencyMs, entries };
}

export async function main(): Promise<void> {
  const guard = setTimeout(() => {
    process.stderr.write('reload-gap bench: over its time bound, giving up\n');
    process.exit(1);
  }, 180_000);
  const dir = tempDir('logrelay-reload-gap-');
  const input = join(dir.path, 'app.log');
  dir.file('app.log', '');
  const config = dir.file(
    'node.toml',
    `shutdown_timeout_ms = 5000
[[pipelines]]
name = "app"
${fileSourceToml('tail', dir.path, 'pattern = "*.log"')}${sinkToml('out', 'stdout')}`,
  );
  const node = spawnNode(['-c', config]);
  try {
    const arrivals = stampLines(node);
    await waitFor(() => node.records.some((r) => r.msg === 'Starting pipeline'), 'pipeline started');
    const writer = startWriter(input);
    await waitFor(() => arrivals.length > 0, 'first line through');
    const windows: Window[] = [];
    const baseFrom = performance.now();
    await sleep(BASELINE_MS);
    windows.push({ name: 'no reload', from: baseFrom, to: performance.now() });
    const reloaded = () => node.records.filter((r) => r.msg === 'Configuration reloaded').length;
    const hups: { at: number; reloadMs: number }[] = [];
    for (let i = 1; i <= RELOADS; i++) {
      const at = performance.now();
      node.signal('SIGHUP');
      await waitFor(() => reloaded() === i, `reload ${i} done`, 30_000);
      hups.push({ at, reloadMs: performance.now() - at });
      await sleep(Math.max(0, RELOAD_SPACING_MS - (performance.now() - at)));
    }
    const end = performance.now();
    hups.forEach((h, i) => {
      windows.push({ name: `reload ${i + 1}`, from: h.at, to: hups[i + 1]?.at ?? end, reloadMs: h.reloadMs });
    });
    const total = writer.stop();
    await waitFor(() => arrivals.length >= total, `all ${total} lines arrive`, 20_000);
    await sleep(500); // a duplicate would come with the last batch
    const seen = new Map<number, number>();
    for (const a of arrivals) seen.set(a.n, (seen.get(a.n) ?? 0) + 1);
    let missing = 0;
    let duplicated = 0;
    for (let n = 1; n <= total; n++) {
      const c = seen.get(n) ?? 0;
      if (c === 0) missing++;
      if (c > 1) duplicated += c - 1;
    }
    const errors = node.records.filter((r) => r.level === 'error').length;

    const rows = windows.map((w) => {
      const f = measure(arrivals, writer.appendedAt, w.from, w.to);
      return { w, f };
    });
    const reloadRows = rows.filter((r) => r.w.reloadMs !== undefined);
    const head = ['window', 'reload ms', 'longest gap ms', 'worst latency ms', 'entries'];
    const body = rows.map(({ w, f }) => [w.name, w.reloadMs?.toFixed(0) ?? '-', f.gapMs.toFixed(0), f.latencyMs.toFixed(0), String(f.entries)]);
    const max = (xs: number[]) => Math.max(...xs);
    const median = (xs: number[]) => [...xs].sort((a, b) => a - b)[Math.floor(xs.length / 2)] ?? 0;
    const gaps = reloadRows.map((r) => r.f.gapMs);
    body.push(['all reloads: median', median(reloadRows.map((r) => r.w.reloadMs!)).toFixed(0), median(gaps).toFixed(0), median(reloadRows.map((r) => r.f.latencyMs)).toFixed(0), '']);
    body.push(['all reloads: max', max(reloadRows.map((r) => r.w.reloadMs!)).toFixed(0), max(gaps).toFixed(0), max(reloadRows.map((r) => r.f.latencyMs)).toFixed(0), '']);
    process.stdout.write(
      `Reload handover: file source (100 ms tail) → stdout sink, one line appended every ${APPEND_EVERY_MS} ms, ${RELOADS} SIGHUP reloads ${RELOAD_SPACING_MS} ms apart\n`,
    );
    process.stdout.write(`${textTable(head, body)}\n`);
    process.stdout.write(`lines appended ${total}, received ${arrivals.length}, missing ${missing}, duplicated ${duplicated}, service-log errors ${errors}\n`);
    if (missing > 0 || duplicated > 0) process.exitCode = 1;
  } finally {
    clearTimeout(guard);
    await node.stop();
    dir.remove();
  }
}

runIfMain(import.meta.url, main);
