// Sink queues under pressure, with a real node: a stalled `drop` sink drops and counts while its
// sibling gets everything (issue 3, acceptance 3), memory stays bounded under a 10× overload
// (issue 3, acceptance 4), and SIGTERM drains what a file sink has queued (issue 4, acceptance 4).

import { mkdirSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import test, { type ExecutionContext } from 'ava';
import { runOverload } from '../../bench/overload.js';
import { fifoSinkDir } from '../helpers/fifo.js';
import { readOrEmpty, text } from '../helpers/lines.js';
import { exitedWithin, type RunningNode, sleep, startNodeInDir, type TempDir, tempDir, waitFor } from '../helpers/node.js';
import { latestCounter, latestStatus } from '../helpers/status.js';
import { fileSinkToml, filePipeline, sinkToml } from '../helpers/toml.js';

const MiB = 1024 * 1024;

/** Runs a node on `body` (pipelines), a status report every second at debug. */
const startNode = (t: ExecutionContext, dir: TempDir, body: string, shutdownTimeoutMs = 5000): RunningNode =>
  startNodeInDir(t, dir, body, { statusIntervalMs: 1000, shutdownTimeoutMs });

/** Numbered lines padded to 100 bytes, so a 64 KiB pipe holds only a few hundred. */
function numbered(from: number, to: number): string[] {
  const out: string[] = [];
  for (let i = from; i <= to; i++) out.push(`entry ${String(i).padStart(7, '0')} ${'x'.repeat(85)}`);
  return out;
}

/** A fresh temp dir whose `in/app.log` holds numbered(1, total), and those lines. */
function withInput(prefix: string, total: number): { readonly dir: TempDir; readonly all: string[] } {
  const dir = tempDir(prefix);
  mkdirSync(join(dir.path, 'in'));
  const all = numbered(1, total);
  writeFileSync(join(dir.path, 'in', 'app.log'), text(all));
  return { dir, all };
}

test.serial('on_full = "drop": a sink whose reader stalls drops and counts, the other sink receives everything', async (t) => {
  const total = 20_000;
  const { dir, all } = withInput('logrelay-sink-drop-', total);
  const node = startNode(
    t,
    dir,
    filePipeline(
      join(dir.path, 'in'),
      'from = "start"',
      sinkToml('stalled', 'stdout', 'buffer_size = 10\non_full = "drop"') + fileSinkToml('all', join(dir.path, 'out'), 'on_full = "block"'),
    ),
  );
  // nobody reads the node's stdout from here on: the pipe fills and the stdout sink stalls
  node.child.stdout!.pause();
  const out = join(dir.path, 'out', 'out.1.log');
  const read = () => readOrEmpty(out);
  await waitFor(() => read().length >= text(all).length, `all ${total} entries in the file sink`, 30_000);
  t.deepEqual(read().split('\n').slice(0, -1), all);
  const stalledReport = await waitFor(() => {
    const r = latestStatus(node, 'p');
    return r && r['sources.f.total_entries'] === total && r['sinks.all.total_processed'] === total ? r : undefined;
  }, 'a status report with every entry read and written to the file');
  const dropped = stalledReport.total_dropped_by_sink as number;
  const processed = stalledReport['sinks.stalled.total_processed'] as number;
  t.true(dropped > total / 2, `the stalled sink dropped most entries (dropped ${dropped} of ${total})`);
  t.true(processed < total / 2, `the stalled sink took only what the pipe buffers hold (${processed})`);
  // every entry either went to the stalled sink, was dropped for it, or still waits in its queue
  t.true(processed + dropped <= total && processed + dropped >= total - 10, `${processed} + ${dropped} accounts for ${total} within buffer_size`);
  t.is(latestCounter(node, 'p', 'sources.f.dropped_entries'), 0);

  // the reader resumes: what the stalled sink took arrives whole and in order, and the counters close
  node.child.stdout!.resume();
  const final = await waitFor(() => {
    const r = latestStatus(node, 'p');
    if (!r) return undefined;
    const p = r['sinks.stalled.total_processed'] as number;
    return p + (r.total_dropped_by_sink as number) === total && node.out.length === p ? r : undefined;
  }, 'the stalled sink catches up with what it queued');
  t.is(final.total_dropped_by_sink, dropped, 'nothing more dropped after the stall');
  const byNumber = new Map(all.map((l, i) => [l, i]));
  let last = -1;
  const bad = node.out.filter((l) => {
    const i = byNumber.get(l);
    if (i === undefined || i <= last) return true;
    last = i;
    return false;
  });
  t.deepEqual(bad.slice(0, 5), [], 'stdout lines are whole, each once, in order');
  t.deepEqual(
    node.records.filter((r) => r.level === 'error'),
    [],
  );
});

test.serial('a drain cut short counts every entry it abandons, those still buffered by the stdout stream included', async (t) => {
  const total = 20_000;
  const { dir, all } = withInput('logrelay-sink-cut-', total);
  const node = startNode(t, dir, filePipeline(join(dir.path, 'in'), 'from = "start"', sinkToml('stalled', 'stdout', 'buffer_size = 100000')), 1000);
  node.child.stdout!.pause();
  await waitFor(() => latestCounter(node, 'p', 'sources.f.total_entries') === total, `the source read all ${total} entries`);
  t.is(latestCounter(node, 'p', 'total_dropped_by_sink'), 0);
  node.signal('SIGTERM');
  const { code } = await exitedWithin(node, 'the cut drain ends');
  t.is(code, 1, 'exit 1: the deadline cut the drain short');
  // what was not abandoned reaches the reader once it reads again, whole and in order
  node.child.stdout!.resume();
  await node.finish('stdout and stderr read to their end');
  const cut = node.records.find((r) => r.msg === 'Drain deadline passed, entries abandoned');
  t.is(cut?.pipeline, 'p');
  const abandoned = cut?.abandoned;
  if (typeof abandoned !== 'number') return t.fail(`no abandoned count: ${JSON.stringify(cut)}`);
  t.deepEqual(node.out, all.slice(0, node.out.length));
  t.is(node.out.length + abandoned, total, `${node.out.length} delivered + ${abandoned} abandoned = ${total}`);
});

test.serial('a drain cut short while a file sink write is stuck (stalled FIFO) ends at the deadline, not at the kill', async (t) => {
  const total = 20_000;
  // the sink's FIFO is opened, never read: the sink's write blocks in the thread pool
  const { dir } = fifoSinkDir(t, 'logrelay-sink-stuck-');
  writeFileSync(join(dir.path, 'in', 'app.log'), text(numbered(1, total)));
  const shutdownMs = 1000;
  const node = startNode(t, dir, filePipeline(join(dir.path, 'in'), 'from = "start"', fileSinkToml('out', join(dir.path, 'out'), 'buffer_size = 100000')), shutdownMs);
  await waitFor(() => latestCounter(node, 'p', 'sources.f.total_entries') === total, `the source read all ${total} entries`);
  const t0 = Date.now();
  node.signal('SIGTERM');
  const { code } = await exitedWithin(node, 'the cut drain ends');
  const took = Date.now() - t0;
  await node.finish('stdout and stderr read to their end');
  t.is(code, 1, 'exit 1: the deadline cut the drain short');
  const cut = node.records.find((r) => r.msg === 'Drain deadline passed, entries abandoned');
  t.true(Number(cut?.abandoned) > 0, 'the abandoned entries are counted');
  // the primary kills a worker still alive at shutdown_timeout_ms + 2 s; this one ends by itself
  t.true(took < shutdownMs + 1700, `exited ${took} ms after SIGTERM`);
});

test.serial('worker memory stays bounded under a 10× overload of its slowest sink', async (t) => {
  // 20,000 entries/s into a stdout sink whose reader takes 2,000/s; speed is measured in bench/overload.ts, not here
  const r = await runOverload({ inputRate: 20_000, readRate: 2000, seconds: 10 });
  t.log(
    `written ${r.written}, delivered ${r.delivered}, dropped ${r.dropped}; worker RSS ${(r.rssStart / MiB).toFixed(1)} → max ${(r.rssMax / MiB).toFixed(1)} MiB, VmHWM ${(r.hwm / MiB).toFixed(1)} MiB`,
  );
  t.is(r.read, r.written, 'the source read all input: the overload reached the sink queue');
  t.true(r.dropped > r.written / 2, `most entries dropped for the slow sink (${r.dropped} of ${r.written})`);
  t.true(r.processed + r.dropped <= r.written && r.processed + r.dropped >= r.written - 1000, 'every entry processed, dropped or queued');
  t.true(r.rssMax - r.rssStart < 100 * MiB, `peak RSS growth ${((r.rssMax - r.rssStart) / MiB).toFixed(1)} MiB is under 100 MiB`);
  t.true(r.hwm < r.rssStart + 100 * MiB, `VmHWM ${(r.hwm / MiB).toFixed(1)} MiB stays within 100 MiB of the start`);
});

test.serial('SIGTERM with entries queued in a file sink: exit 0 and every queued entry is in the file', async (t) => {
  const total = 100_000;
  // the sink's current file is a FIFO this test reads: while it does not, the sink's queue holds the burst
  const { dir, received, stream: reader } = fifoSinkDir(t, 'logrelay-sink-drain-');
  const node = startNode(
    t,
    dir,
    filePipeline(join(dir.path, 'in'), 'check_interval_ms = 100', fileSinkToml('out', join(dir.path, 'out'), 'buffer_size = 200000\non_full = "block"')),
    20_000,
  );
  await waitFor(() => latestCounter(node, 'p', 'sources.f.active_watchers') === 0, 'source running');
  // a burst in a new file (read from its start): the source reads it all, the sink queues it
  const all = numbered(1, total);
  writeFileSync(join(dir.path, 'in', 'burst.log'), text(all));
  const queued = await waitFor(() => {
    const r = latestStatus(node, 'p');
    return r && r['sources.f.total_entries'] === total ? r : undefined;
  }, `the source read all ${total} entries`);
  const processed = queued['sinks.out.total_processed'] as number;
  t.true(processed < total / 2, `most of the burst is queued, not written (${processed} handed to the sink)`);
  node.signal('SIGTERM');
  await waitFor(() => node.records.some((r) => r.msg === 'Shutting down'), 'shutdown begins');
  // let the stop order reach the worker while the sink is still stalled, so the drain starts with the queue full
  await sleep(300);
  reader.resume();
  const { code } = await node.finish('the drain ends', 60_000);
  t.is(code, 0, 'exit 0: the queue drained');
  await waitFor(() => received.length >= total || reader.closed, 'the FIFO reader has everything');
  t.is(received.length, total);
  t.deepEqual(received, all);
  t.deepEqual(
    node.records.filter((r) => r.level === 'error'),
    [],
  );
});
