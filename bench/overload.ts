// Overload: a file source fed faster than its slowest sink can take. The `stdout` sink
// (on_full = "drop") writes into a pipe this process reads at a fixed byte rate, so the input
// is a chosen multiple of what the sink can deliver; the worker's RSS is sampled from /proc
// throughout. Shows that the sink queue bounds memory: what cannot be delivered is dropped and
// counted, never buffered. `node dist/bench/overload.js`; about a minute. The integration test
// runs one scenario of it and asserts only the memory bound, never a speed.

import { closeSync, openSync, writeSync } from 'node:fs';
import { join } from 'node:path';
import type { Readable } from 'node:stream';
import { childPids, type RunningNode, sleep, spawnNode, tempDir, waitFor } from '../test/helpers/node.js';
import { latestStatus } from '../test/helpers/status.js';
import { fileSourceToml, sinkToml } from '../test/helpers/toml.js';
import { statusBytes } from './proc.js';
import { runIfMain, textTable } from './report.js';

const MiB = 1024 * 1024;
/** Bytes per input line, `\n` included. */
export const LINE_BYTES = 100;
const SAMPLE_EVERY_MS = 250;
const WRITE_EVERY_MS = 10;

export interface OverloadOptions {
  /** entries/s appended to the tailed file */
  readonly inputRate: number;
  /** entries/s the stdout reader takes; Infinity reads as fast as it can, 0 never reads */
  readonly readRate: number;
  readonly seconds: number;
  /** the stdout sink's buffer_size (default 1000) */
  readonly bufferSize?: number;
}

export interface OverloadResult {
  readonly written: number;
  /** entries the source read, from the last status report */
  readonly read: number;
  /** lines the reader received on stdout during the run */
  readonly delivered: number;
  readonly dropped: number;
  /** the stdout sink's `total_processed` at the end */
  readonly processed: number;
  readonly ms: number;
  /** worker VmRSS when the writer started, bytes */
  readonly rssStart: number;
  /** worker VmRSS when the writer stopped, bytes */
  readonly rssEnd: number;
  /** highest VmRSS sampled during the run, bytes */
  readonly rssMax: number;
  /** worker VmHWM at the end (includes start-up), bytes */
  readonly hwm: number;
}

/** One line of exactly LINE_BYTES bytes: the number, then filler. */
export function overloadLine(n: number): string {
  const head = `entry ${String(n).padStart(9, '0')} `;
  return `${head}${'x'.repeat(LINE_BYTES - head.length - 1)}\n`;
}

/** Reads `stream` at no more than `bytesPerSec` by pausing it whenever it gets ahead. */
function throttle(stream: Readable, bytesPerSec: number): () => void {
  if (bytesPerSec === Number.POSITIVE_INFINITY) return () => {};
  if (bytesPerSec <= 0) {
    stream.pause();
    return () => stream.resume();
  }
  const t0 = performance.now();
  let bytes = 0;
  let timer: NodeJS.Timeout | undefined;
  let done = false;
  stream.on('data', (chunk: string | Buffer) => {
    bytes += chunk.length;
    const ahead = (bytes / bytesPerSec) * 1000 - (performance.now() - t0);
    if (ahead > 0 && !timer && !done) {
      stream.pause();
      timer = setTimeout(() => {
        timer = undefined;
        stream.resume();
      }, ahead);
    }
  });
  return () => {
    done = true;
    clearTimeout(timer);
    stream.resume();
  };
}

/** Appends numbered lines at `rate` entries/s (kept on schedule however late the timer fires). */
function startWriter(file: string, rate: number) {
  const fd = openSync(file, 'a');
  const t0 = performance.now();
  let n = 0;
  const timer = setInterval(() => {
    const due = Math.floor(((performance.now() - t0) / 1000) * rate);
    let chunk = '';
    while (n < due) chunk += overloadLine(++n);
    if (chunk) writeSync(fd, chunk);
  }, WRITE_EVERY_MS);
  return {
    stop(): number {
      clearInterval(timer);
      closeSync(fd);
      return n;
    },
  };
}

const pipelineReport = (node: RunningNode) => latestStatus(node, 'overload');

const num = (r: Record<string, unknown> | undefined, key: string) => (r?.[key] as number | undefined) ?? 0;

export async function runOverload(opts: OverloadOptions): Promise<OverloadResult> {
  const dir = tempDir('logrelay-overload-');
  const input = join(dir.path, 'app.log');
  const config = dir.file(
    'overload.toml',
    `status_interval_ms = 250
shutdown_timeout_ms = 1000
[[pipelines]]
name = "overload"
${fileSourceToml('in', dir.path, 'pattern = "*.log"')}${sinkToml('slow', 'stdout', `on_full = "drop"\nbuffer_size = ${opts.bufferSize ?? 1000}`)}`,
  );
  dir.file('app.log', '');
  const node = spawnNode(['-c', config, '--logging.level=debug']);
  const unthrottle = throttle(node.child.stdout!, opts.readRate * LINE_BYTES);
  try {
    await waitFor(() => pipelineReport(node)?.['sources.in.active_watchers'] === 1, 'the source watches the input', 30_000);
    const worker = await waitFor(async () => (await childPids(node.child.pid!))[0], 'worker pid');
    const outBefore = node.out.length;
    const rssStart = statusBytes(worker, 'VmRSS');
    let rssMax = rssStart;
    const writer = startWriter(input, opts.inputRate);
    const t0 = performance.now();
    while (performance.now() - t0 < opts.seconds * 1000) {
      await sleep(SAMPLE_EVERY_MS);
      rssMax = Math.max(rssMax, statusBytes(worker, 'VmRSS'));
    }
    const written = writer.stop();
    const ms = performance.now() - t0;
    const delivered = node.out.length - outBefore;
    const rssEnd = statusBytes(worker, 'VmRSS');
    // the source catches up with the writer (it is never paused: the sink drops instead)
    const last = await waitFor(
      () => {
        const r = pipelineReport(node);
        return num(r, 'sources.in.total_entries') >= written ? r : undefined;
      },
      `the source reads all ${written} entries`,
      30_000,
    );
    const hwm = statusBytes(worker, 'VmHWM');
    return {
      written,
      read: num(last, 'sources.in.total_entries'),
      delivered,
      dropped: num(last, 'total_dropped_by_sink'),
      processed: num(last, 'sinks.slow.total_processed'),
      ms,
      rssStart,
      rssEnd,
      rssMax: Math.max(rssMax, rssEnd),
      hwm,
    };
  } finally {
    unthrottle();
    await node.stop();
    dir.remove();
  }
}

interface Scenario {
  readonly name: string;
  readonly opts: OverloadOptions;
}

const SECONDS = 15;
const SCENARIOS: readonly Scenario[] = [
  { name: '1× (reader keeps up)', opts: { inputRate: 2000, readRate: Number.POSITIVE_INFINITY, seconds: SECONDS } },
  { name: '10× (reader at 2,000/s)', opts: { inputRate: 20_000, readRate: 2000, seconds: SECONDS } },
  { name: '10×, buffer_size 10000', opts: { inputRate: 20_000, readRate: 2000, seconds: SECONDS, bufferSize: 10_000 } },
  { name: 'stalled reader', opts: { inputRate: 20_000, readRate: 0, seconds: SECONDS } },
];

export async function main(): Promise<void> {
  const guard = setTimeout(() => {
    process.stderr.write('overload bench: over its time bound, giving up\n');
    process.exit(1);
  }, 240_000);
  try {
    const rows: string[][] = [];
    for (const s of SCENARIOS) {
      const r = await runOverload(s.opts);
      const mb = (b: number) => (b / MiB).toFixed(1);
      rows.push([
        s.name,
        (r.written / (r.ms / 1000)).toFixed(0),
        (r.delivered / (r.ms / 1000)).toFixed(0),
        String(r.dropped),
        mb(r.rssStart),
        mb(r.rssMax),
        mb(r.rssEnd),
        mb(r.hwm),
        mb(r.rssMax - r.rssStart),
      ]);
    }
    process.stdout.write(
      `Overload: file source → stdout sink (on_full = "drop") into a pipe read at a fixed rate; ${LINE_BYTES}-byte lines, ${SECONDS} s per scenario; worker RSS from /proc\n`,
    );
    process.stdout.write(
      `${textTable(['scenario', 'input entries/s', 'delivered entries/s', 'dropped', 'RSS start MiB', 'RSS max MiB', 'RSS end MiB', 'VmHWM MiB', 'growth MiB'], rows)}\n`,
    );
  } finally {
    clearTimeout(guard);
  }
}

runIfMain(import.meta.url, main);
