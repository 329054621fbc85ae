// The dedup stage (DESIGN.md §14): the window's two bounds, hand-over, and its place as the first flow stage.

import test from 'ava';
import { DedupSet } from '../../src/flow/dedup.js';
import { createFlow } from '../../src/flow/index.js';

const T0 = Date.parse('2026-01-02T03:04:05.000Z');

test('an id seen within the window is a duplicate; a new one is remembered', (t) => {
  const d = new DedupSet(10, 60_000);
  t.false(d.check('a', T0));
  t.true(d.check('a', T0 + 1));
  t.false(d.check('b', T0 + 2));
  t.is(d.size, 2);
});

test('the window keeps at most window_entries ids, oldest out first', (t) => {
  const d = new DedupSet(3, 60_000);
  for (const id of ['a', 'b', 'c', 'd']) t.false(d.check(id, T0));
  t.is(d.size, 3);
  t.false(d.check('a', T0), 'a was evicted by d, so it passes again');
  t.true(d.check('d', T0));
});

test('an id older than window_ms is forgotten', (t) => {
  const d = new DedupSet(100, 1000);
  t.false(d.check('a', T0));
  t.true(d.check('a', T0 + 1000));
  t.false(d.check('a', T0 + 1001), 'past window_ms it passes again');
});

test('a snapshot loaded into another window carries the ids and their ages', (t) => {
  const a = new DedupSet(100, 1000);
  a.check('x', T0);
  a.check('y', T0 + 500);
  const snap = a.snapshot(T0 + 600);
  t.deepEqual(snap, { ids: ['x', 'y'], times: [T0, T0 + 500] });
  const b = new DedupSet(100, 1000);
  b.load(snap, T0 + 600);
  t.true(b.check('x', T0 + 900), 'x came over as seen at T0');
  t.true(b.check('y', T0 + 1400), 'y came over as seen at T0+500, so it is still in the window');
  t.false(b.check('x', T0 + 1100), 'x has aged out');
});

test('1,000,000 distinct ids through a window of 100,000 keep it at 100,000', (t) => {
  const d = new DedupSet(100_000, 600_000);
  for (let i = 0; i < 1_000_000; i++) d.check(`id-${i}`, T0);
  t.is(d.size, 100_000);
  t.true(d.check('id-999999', T0));
  t.false(d.check('id-0', T0));
});

test('dedup is the first flow stage: a duplicate is counted apart from drops and never formatted', (t) => {
  const flow = createFlow({
    dedup: { enabled: true, window_entries: 10, window_ms: 60_000 },
    rate_limit: { rate: 1, burst: 1, policy: 'drop', max_entry_size_bytes: 0 },
    filters: [],
    format: { type: 'raw' },
  });
  const e = { time: T0, source: 's', message: 'm', id: 'i1' };
  t.is(flow.process({ ...e }, T0), 'm');
  t.is(flow.process({ ...e }, T0), undefined);
  t.is(flow.counters.duplicates_dropped, 1);
  t.is(flow.counters.total_dropped, 0, 'the duplicate took no token from the rate limiter and is no drop');
  t.is(flow.process({ time: T0, source: 's', message: 'no id' }, T0), undefined);
  t.is(flow.counters.total_dropped, 1, 'an entry without an id passes dedup and meets the limiter, whose one token is gone');
  t.is(flow.counters.duplicates_dropped, 1);
});

test('without dedup the flow has no duplicates_dropped counter', (t) => {
  const flow = createFlow({ filters: [], format: { type: 'raw' } });
  t.is(flow.counters.duplicates_dropped, undefined);
  t.is(flow.dedup, undefined);
});
