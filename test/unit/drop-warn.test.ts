// The `Entries dropped` warning (DESIGN.md §16) from counter diffs: first loss told at the next
// tick, then at most one line per reason per interval, the count being what was lost since.

import test from 'ava';
import type { PipelineCounters } from '../../src/core/counters.js';
import { dropsOf } from '../../src/core/drops.js';
import { createLogger } from '../../src/core/log.js';
import { createDropWarner, DROP_WARN_INTERVAL_MS } from '../../src/worker/drop-warn.js';

function capture() {
  const lines: Record<string, unknown>[] = [];
  const log = createLogger('debug', { write: (l: string) => void lines.push(JSON.parse(l) as Record<string, unknown>) });
  return { log, lines };
}

const counters = (queueFull: number, rateLimited: number, bySize = 0, failedWrites = 0): PipelineCounters => ({
  total_dropped_by_sink: queueFull,
  flow: { total_processed: 0, total_dropped: rateLimited, total_passed: 0 },
  rate_limit: { dropped_total: rateLimited, dropped_by_size_total: bySize, available_tokens: 0 },
  sources: { f: { total_entries: 0, dropped_entries: 0 } },
  sinks: { out: { total_processed: 0, dropped_queue_full: queueFull, abandoned: 0, dropped_writes: failedWrites } },
});

test('drops: one line per reason at most once per interval, with the count since the last line', (t) => {
  const { log, lines } = capture();
  const w = createDropWarner(log, 'p', { out: 'stdout' });
  const t0 = 1_000_000;
  w.check(counters(0, 0), false, t0);
  t.is(lines.length, 0, 'nothing lost, nothing said');
  w.check(counters(5, 0), false, t0 + 1000);
  t.deepEqual(
    lines.map((l) => [l.level, l.msg, l.pipeline, l.plugin, l.reason, l.count]),
    [['warn', 'Entries dropped', 'p', 'out', 'queue_full', 5]],
  );
  w.check(counters(9, 3), false, t0 + 2000);
  t.is(lines.length, 2, 'another reason has its own minute');
  t.like(lines[1], { plugin: 'rate_limit', reason: 'rate_limited', count: 3 });
  w.check(counters(20, 3), false, t0 + 1000 + DROP_WARN_INTERVAL_MS - 1);
  t.is(lines.length, 2, 'queue_full waits for its minute');
  w.check(counters(20, 3), false, t0 + 1000 + DROP_WARN_INTERVAL_MS);
  t.like(lines[2], { reason: 'queue_full', count: 15 });
  w.check(counters(21, 3), true, t0 + 1000 + DROP_WARN_INTERVAL_MS + 10);
  t.like(lines[3], { reason: 'queue_full', count: 1 }, 'a stop tells what is pending at once');
});

test('drop reasons: a stdout or file sink\u2019s failed writes are write_failed; a tcp sink\u2019s are client_slow; oversize apart from rate_limited', (t) => {
  const c = counters(0, 10, 4, 7);
  t.false(dropsOf(c, { out: 'stdout' }).some((d) => d.reason === 'client_slow'));
  t.like(dropsOf(c, { out: 'stdout' }).find((d) => d.reason === 'write_failed'), { component: 'out', count: 7 });
  t.like(dropsOf(c, { out: 'file' }).find((d) => d.reason === 'write_failed'), { component: 'out', count: 7 });
  t.like(dropsOf(c, { out: 'tcp' }).find((d) => d.reason === 'client_slow'), { component: 'out', count: 7 });
  const drops = dropsOf(c, {});
  t.like(drops.find((d) => d.reason === 'rate_limited'), { count: 6 });
  t.like(drops.find((d) => d.reason === 'oversize'), { count: 4 });
});
