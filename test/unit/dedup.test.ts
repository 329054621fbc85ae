// The dedup stage (DESIGN.md §14): the window's two bounds, hand-over, and its place as the first flow stage.

import { setFlagsFromString } from 'node:v8';
import { runInNewContext } from 'node:vm';
import test from 'ava';
import fc from 'fast-check';
import { eachId, joinIds, joinIdsSlowly, packChunk, PackedWindow, tryJoinIds } from '../../src/core/dedup-window.js';
import { DedupSet } from '../../src/flow/dedup.js';
import { createFlow } from '../../src/flow/index.js';
import { DoneIds } from '../../src/worker/acks.js';
import { xorshift } from '../helpers/random.js';

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

test('a packed window loaded into another carries the ids and their ages', (t) => {
  const b = new DedupSet(100, 1000);
  b.load([packChunk(['x', 'y'], [T0, T0 + 500])], T0 + 600);
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

test('the window answers as a plain list of (id, time) would, through evictions, expiry and wrap-around of its table', (t) => {
  const rand = xorshift(0x9e3779b9);
  for (const [maxEntries, maxMs, alphabet] of [
    [1, 50, 4],
    [3, 100, 8],
    [7, 1000, 20],
    [50, 300, 120],
    [500, 10_000, 2000],
  ] as const) {
    const d = new DedupSet(maxEntries, maxMs);
    let model: { id: string; at: number }[] = [];
    let now = T0;
    for (let step = 0; step < 20_000; step++) {
      now += Math.floor(rand() * (maxMs / 20));
      model = model.filter((m) => now - m.at <= maxMs);
      const id = `id-${Math.floor(rand() * alphabet)}`;
      const known = model.some((m) => m.id === id);
      if (rand() < 0.3) {
        t.is(d.has(id, now), known, `has ${id} at step ${step} (window ${maxEntries})`);
        continue;
      }
      t.is(d.check(id, now), known, `check ${id} at step ${step} (window ${maxEntries})`);
      if (!known) {
        model.push({ id, at: now });
        if (model.length > maxEntries) model.shift();
      }
      t.is(d.size, model.length);
    }
  }
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

test('packed chunks: ids done together share a run; an id with a newline is not packed', (t) => {
  const c = packChunk(['a', 'b', 'bad\nid', 'c'], [T0, T0, T0, T0 + 5]);
  t.deepEqual(c, { ids: 'a\nb\nc', runs: [T0, 2, T0 + 5, 1], prefixes: 1 });
  const seen: [string, number][] = [];
  eachId([c, packChunk([], [])], (id, time) => seen.push([id, time]));
  t.deepEqual(seen, [
    ['a', T0],
    ['b', T0],
    ['c', T0 + 5],
  ]);
});

test("packed chunks write an id's prefix (to its last '.') once while the next ids share it, and read back every id through cuts", (t) => {
  const ids = ['BiW5ZzqOgmcMuTfI.ph59p', 'BiW5ZzqOgmcMuTfI.ph5a0', 'BiW5ZzqOgmcMuTfI.', '.dot.first', '..', 'x.y.z', 'x.y.w', 'x.y2', 'plain', 'BiW5ZzqOgmcMuTfI.ph5a1'];
  const times = ids.map((_, i) => T0 + i);
  const c = packChunk(ids, times);
  t.is(c.ids.split('\n').slice(0, 3).join('\n'), 'BiW5ZzqOgmcMuTfI.ph59p\n.ph5a0\n.', 'the shared prefix is written once');
  t.true(c.ids.length < ids.join('\n').length - 30);
  const back = (w: Parameters<typeof eachId>[0]) => {
    const out: string[] = [];
    eachId(w, (id) => out.push(id));
    return out;
  };
  t.deepEqual(back([c]), ids);
  // cut at every place, by the primary's copy (window_entries) and by the worker's journal
  for (let keep = 1; keep <= ids.length; keep++) {
    const w = new PackedWindow(keep, 60_000);
    w.load([c], T0);
    t.deepEqual(back(w.snapshot(T0)), ids.slice(ids.length - keep), `the newest ${keep}`);
    const journal = new DoneIds(keep);
    journal.add(ids.slice(0, 4), T0);
    journal.add(ids.slice(4), T0 + 1);
    t.deepEqual(back(journal.take() ?? []), ids.slice(ids.length - keep), `the journal's newest ${keep}`);
  }
  t.deepEqual(back([{ ids: '.old\nlayout', runs: [T0, 2] }]), ['.old', 'layout'], 'a chunk without prefixes (an older checkpoint) reads as written');
});

test("the primary's packed copy keeps the newest window_entries ids and none older than window_ms", (t) => {
  const w = new PackedWindow(5, 1000);
  w.load([packChunk(['a', 'b', 'c'], [T0, T0, T0 + 1])], T0);
  w.load([packChunk(['d', 'e', 'f', 'g'], [T0 + 2, T0 + 2, T0 + 3, T0 + 3])], T0 + 3);
  t.is(w.size, 5);
  const ids: [string, number][] = [];
  eachId(w.snapshot(T0 + 3), (id, time) => ids.push([id, time]));
  t.deepEqual(ids, [
    ['c', T0 + 1],
    ['d', T0 + 2],
    ['e', T0 + 2],
    ['f', T0 + 3],
    ['g', T0 + 3],
  ]);
  t.deepEqual(w.snapshot(T0 + 1002), [{ ids: 'd\ne\nf\ng', runs: [T0 + 2, 2, T0 + 3, 2], prefixes: 1 }], 'the chunk whose newest id aged out is gone');
  const d = new DedupSet(10, 1000);
  d.load(w.snapshot(T0 + 1002), T0 + 1002);
  t.true(d.check('g', T0 + 1002));
  t.false(d.check('d', T0 + 1003), 'a worker loading it still drops the ids past window_ms');
});

test('a 100,000-id window and its packed copy: 1,000,000 ids through both keep 100,000', (t) => {
  const w = new PackedWindow(100_000, 600_000);
  for (let k = 0; k < 100; k++) {
    const ids = Array.from({ length: 10_000 }, (_, i) => `id-${k * 10_000 + i}`);
    w.load([packChunk(ids, ids.map(() => T0 + k))], T0 + k);
  }
  t.is(w.size, 100_000);
  const d = new DedupSet(100_000, 600_000);
  d.load(w.snapshot(T0 + 100), T0 + 100);
  t.is(d.size, 100_000);
  t.true(d.check('id-900000', T0 + 100));
  t.false(d.check('id-899999', T0 + 100));
});

test('the window keeps its ids, not the lines they were read from', (t) => {
  setFlagsFromString('--expose-gc');
  const gc = runInNewContext('gc') as () => void;
  gc();
  const before = process.memoryUsage().heapUsed;
  const d = new DedupSet(100_000, 60_000);
  // each id a slice of a line of its own, as a chain source reads it: 100,000 lines of ~1 KB
  for (let i = 0; i < 100_000; i++) {
    const line = `{"message":"${'x'.repeat(1000)}","id":"Abcdefghijklmnop.${i}"}`;
    d.check(line.slice(line.indexOf('"id":"') + 6, -2), T0);
  }
  gc();
  const grew = (process.memoryUsage().heapUsed - before) / 1e6;
  t.is(d.size, 100_000);
  t.true(grew < 40, `the window holds ${grew.toFixed(1)} MB (the lines would be 100 MB)`);
  t.log(`100,000 ids: ${grew.toFixed(1)} MB of heap`);
});

test('ids the byte store cannot hold (over 32 characters, or past U+00FF) are kept and evicted as the others', (t) => {
  const d = new DedupSet(3, 60_000);
  const long = `${'L'.repeat(40)}.1`;
  const wide = 'ιδ.1';
  const latin = 'é.1';
  for (const id of [long, wide, latin]) t.false(d.check(id, T0), id);
  for (const id of [long, wide, latin]) t.true(d.check(id, T0), `${id} is held`);
  t.false(d.check(`${'L'.repeat(40)}.2`, T0), 'a long id differing in its last character is new');
  t.false(d.has(long, T0), 'the oldest (the long one) was evicted by it');
  t.false(d.check('ιδ.2', T0));
  t.false(d.has(wide, T0), 'then the wide one');
  t.true(d.has(latin, T0));
  t.false(d.has('é.', T0), 'a prefix of a held id is not it');
  t.false(d.has('é.12', T0), 'nor an id it is a prefix of');
});

test("the flow's lookup before the decode stops while duplicates are rare and resumes when they come; every duplicate is dropped either way", (t) => {
  const flow = createFlow({ dedup: { enabled: true, window_entries: 200_000, window_ms: 600_000 }, filters: [], format: { type: 'raw' } });
  // what a chain source does per line: ask `seen` before the decode, else hand the entry to `process`
  let before = 0;
  const line = (id: string) => {
    if (flow.seen(id, T0)) before++;
    else flow.process({ time: T0, source: 's', message: id, id }, T0);
  };
  for (let i = 0; i < 20_000; i++) line(`new-${i}`);
  // behind balance edges: all new; now a failover's resend, every line a duplicate
  const beforeResend = before;
  for (let i = 0; i < 20_000; i++) line(`new-${i}`);
  t.is(flow.counters.duplicates_dropped, 20_000, 'each resent line dropped once, before or after its decode');
  t.true(before - beforeResend >= 20_000 - 16_384, `the lookups resumed within 16,384 lines (${before - beforeResend} of 20,000 dropped before the decode)`);
  t.true(before - beforeResend < 20_000, 'while they were off, duplicates met process instead');
  t.is(flow.counters.total_passed, 20_000);
});

test('joinIds writes the same text as a string per id joined (joinIdsSlowly), for any ids; tryJoinIds refuses ids with a newline', (t) => {
  // ids from a small alphabet, so prefixes are shared, `.` leads, and a character past U+00FF comes
  const char = fc.constantFrom('a', 'b', '.', 'Z', '0', '\u00e9', '\u00ff', '\u0100', '\u4e2d', '\ud83d', '\n');
  const id = fc.array(char, { maxLength: 12 }).map((cs) => cs.join(''));
  const shared = fc.tuple(fc.constantFrom('BiW5ZzqOgmcMuTfI.', 'x.y.', '.', ''), fc.array(fc.constantFrom('p', 'q', '1', '.'), { maxLength: 4 })).map(([p, tail]) => p + tail.join(''));
  fc.assert(
    fc.property(fc.array(fc.oneof(id, shared), { maxLength: 40 }), (ids) => {
      const newline = ids.some((id) => id.includes('\n'));
      t.is(tryJoinIds(ids), newline ? undefined : joinIdsSlowly(ids));
      if (!newline) t.is(joinIds(ids), joinIdsSlowly(ids));
    }),
    { numRuns: 2000 },
  );
  // past the scratch buffer's first size
  const many = Array.from({ length: 5000 }, (_, i) => `BiW5ZzqOgmcMuTfI.${(i * 198).toString(36)}${'x'.repeat(i % 30)}`);
  t.is(joinIds(many), joinIdsSlowly(many));
});

test("the primary's packed copy cut anywhere keeps the newest ids, for any ids sharing prefixes or not", (t) => {
  // what dropIds reads: lines written whole, with a prefix (`.` and a tail), and escaped (`..`)
  const char = fc.constantFrom('a', 'b', '.', 'Z', '0', '\u00e9');
  const id = fc.array(char, { maxLength: 10 }).map((cs) => cs.join(''));
  const shared = fc.tuple(fc.constantFrom('BiW5ZzqOgmcMuTfI.', 'x.y.', '.', '..', ''), fc.array(fc.constantFrom('p', 'q', '1', '.'), { maxLength: 4 })).map(([p, tail]) => p + tail.join(''));
  fc.assert(
    // an empty id among them, or alone in what is left of a chunk (the text ''), included
    fc.property(fc.array(fc.oneof(id, shared, shared), { minLength: 1, maxLength: 30 }), fc.nat(), (ids, k) => {
      const keep = 1 + (k % ids.length);
      const w = new PackedWindow(keep, 60_000);
      w.load([packChunk(ids, ids.map(() => T0))], T0);
      const out: string[] = [];
      eachId(w.snapshot(T0), (x) => out.push(x));
      t.deepEqual(out, ids.slice(ids.length - keep));
    }),
    { numRuns: 3000 },
  );
});

test('the window answers as a list of the last window_entries new ids would, for ids of any length and characters', (t) => {
  // a small alphabet and window, so ids repeat inside and outside it; long ids and wide characters
  // are kept apart from the byte store
  const char = fc.constantFrom('a', 'b', '.', '\u00e9', '\u0100', '\ud83d');
  const id = fc.oneof(fc.array(char, { maxLength: 3 }).map((cs) => cs.join('')), fc.constantFrom('L'.repeat(32), 'L'.repeat(33), `${'L'.repeat(31)}\u0100`));
  fc.assert(
    fc.property(fc.integer({ min: 1, max: 6 }), fc.array(id, { maxLength: 60 }), (size, ids) => {
      const d = new DedupSet(size, 60_000);
      const list: string[] = [];
      for (const x of ids) {
        const dup = list.includes(x);
        t.is(d.has(x, T0), dup);
        t.is(d.check(x, T0), dup);
        if (!dup) {
          list.push(x);
          if (list.length > size) list.shift();
        }
      }
    }),
    { numRuns: 1000 },
  );
});
