// Model test of the disk buffer (issue 26, acceptance 1): random appends, reads, acknowledgements
// (in any order), bursts of appends (written ahead of their commit while the one before syncs),
// checkpoints, restarts (crash: the primary's acknowledged sequence; node: the
// checkpoint's) and torn tails, against a model of what is on disk. Within one run the reader
// never returns a record twice and never skips one; after a restart it resumes right after the
// sequence it was handed.

import test from 'ava';
import fc from 'fast-check';
import { readdirSync, statSync, truncateSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import { scanSegment, segmentSeq } from '../../src/buffer/record.js';
import { bufferOn, type BufferHarness, collect, entry, seqOf, tempBufferDir, until } from '../helpers/disk-buffer.js';

type Cmd =
  | { readonly kind: 'append'; readonly n: number }
  /** batches appended one after another without waiting: later ones are written ahead while the first commits */
  | { readonly kind: 'burst'; readonly sizes: readonly number[] }
  | { readonly kind: 'read' }
  | { readonly kind: 'ack'; readonly pick: number; readonly all: boolean }
  | { readonly kind: 'checkpoint' }
  | { readonly kind: 'restart'; readonly fromCheckpoint: boolean; readonly cut: number };

const cmd: fc.Arbitrary<Cmd> = fc.oneof(
  { weight: 4, arbitrary: fc.record({ kind: fc.constant('append' as const), n: fc.integer({ min: 1, max: 12 }) }) },
  { weight: 2, arbitrary: fc.record({ kind: fc.constant('burst' as const), sizes: fc.array(fc.integer({ min: 1, max: 12 }), { minLength: 2, maxLength: 8 }) }) },
  { weight: 3, arbitrary: fc.record({ kind: fc.constant('read' as const) }) },
  { weight: 3, arbitrary: fc.record({ kind: fc.constant('ack' as const), pick: fc.nat(), all: fc.boolean() }) },
  { weight: 2, arbitrary: fc.record({ kind: fc.constant('checkpoint' as const) }) },
  { weight: 1, arbitrary: fc.record({ kind: fc.constant('restart' as const), fromCheckpoint: fc.boolean(), cut: fc.integer({ min: 0, max: 60 }) }) },
);

const WINDOW = 7;

/** Sequences of the records in the directory's segments, after a tail cut of the last one. */
function onDisk(dir: string): Set<number> {
  const out = new Set<number>();
  const names = readdirSync(dir).filter((n) => segmentSeq(n) !== undefined).sort();
  for (const name of names) {
    const bytes = readFileSync(join(dir, name));
    let at = 0;
    const scan = scanSegment(bytes);
    // walk the whole records up to the valid end
    while (at < scan.validEnd) {
      const len = bytes.readUInt32LE(at);
      out.add(bytes.readUInt32LE(at + 8) + bytes.readUInt32LE(at + 12) * 2 ** 32);
      at += 16 + len;
    }
  }
  return out;
}

/**
 * `segmentBytes`: small segments roll at nearly every commit; larger ones let a caught-up reader
 * take synced entries as they are. `cacheBytes`: a cache of a record or two makes older commits
 * give way, so the reader reads from the disk up to where the cache begins, then from the cache.
 */
async function run(cmds: readonly Cmd[], segmentBytes: number, cacheBytes: number | undefined): Promise<void> {
  // one directory per property run, removed when the run ends (a test's teardown would keep 80)
  const cleanups: (() => void)[] = [];
  const dir = tempBufferDir({ teardown: (fn) => cleanups.push(fn) });
  try {
    await runIn(dir, cmds, segmentBytes, cacheBytes);
  } finally {
    for (const fn of cleanups) fn();
  }
}

async function runIn(dir: string, cmds: readonly Cmd[], segmentBytes: number, cacheBytes: number | undefined): Promise<void> {
  let h: BufferHarness = bufferOn(dir, segmentBytes, undefined, undefined, cacheBytes);
  await h.buffer.open(0);
  collect(h, WINDOW);
  /** sequences appended and synced, not yet known lost */
  const durable = new Set<number>();
  let saved = 0;
  /** where this run resumed */
  let resumedAfter = 0;
  let counter = 0;
  const emittedSeqs = () => h.emitted.flatMap((e) => e.entries.map((x) => seqOf(x.id!)));
  const expected = () => [...durable].filter((s) => s > resumedAfter).sort((a, b) => a - b);
  const check = () => {
    const got = emittedSeqs();
    const want = expected().slice(0, got.length);
    if (JSON.stringify(got) !== JSON.stringify(want)) throw new Error(`reader returned ${JSON.stringify(got)}, model says ${JSON.stringify(want)} (resumed after ${resumedAfter})`);
  };
  const outstanding = () => h.emitted.filter((e) => !e.settled).reduce((n, e) => n + e.entries.length, 0);

  for (const c of cmds) {
    switch (c.kind) {
      case 'append': {
        const batch = Array.from({ length: c.n }, () => entry(`m${counter++}`));
        let synced = false;
        h.buffer.append(batch, Date.now(), () => (synced = true));
        await until(() => synced, 'append synced');
        for (const e of batch) durable.add(seqOf(e.id!));
        break;
      }
      case 'burst': {
        const batches = c.sizes.map((n) => Array.from({ length: n }, () => entry(`m${counter++}`)));
        let synced = 0;
        for (const batch of batches) h.buffer.append(batch, Date.now(), () => synced++);
        await until(() => synced === batches.length, 'burst synced');
        for (const batch of batches) for (const e of batch) durable.add(seqOf(e.id!));
        break;
      }
      case 'read': {
        // the reader hands on all it may: up to the window, or everything there is
        await until(() => outstanding() >= WINDOW || emittedSeqs().length >= expected().length, `reader caught up (${emittedSeqs().length} of ${expected().length})`);
        break;
      }
      case 'ack': {
        const open = h.emitted.filter((e) => !e.settled);
        const chosen = c.all ? open : open.slice(c.pick % Math.max(1, open.length), (c.pick % Math.max(1, open.length)) + 1);
        for (const e of chosen) {
          e.settled = true;
          e.done();
        }
        break;
      }
      case 'checkpoint':
        saved = h.buffer.acked;
        h.buffer.saved(saved);
        break;
      case 'restart': {
        check();
        const handed = c.fromCheckpoint ? saved : h.buffer.acked;
        await h.buffer.close(Date.now() + 1000);
        if (c.cut > 0) {
          const last = readdirSync(dir).filter((n) => segmentSeq(n) !== undefined).sort().at(-1);
          if (last) truncateSync(join(dir, last), Math.max(0, statSync(join(dir, last)).size - c.cut));
        }
        const survivors = onDisk(dir);
        for (const s of [...durable]) if (!survivors.has(s)) durable.delete(s);
        h = bufferOn(dir, segmentBytes, undefined, undefined, cacheBytes);
        await h.buffer.open(handed);
        if (c.fromCheckpoint) saved = handed;
        resumedAfter = handed;
        collect(h, WINDOW);
        break;
      }
    }
    check();
    const seen = emittedSeqs();
    if (new Set(seen).size !== seen.length) throw new Error(`a record returned twice in one run: ${JSON.stringify(seen)}`);
  }
  // the end: everything left is read, in order
  for (;;) {
    await until(() => outstanding() >= WINDOW || emittedSeqs().length >= expected().length, 'final read');
    check();
    if (emittedSeqs().length >= expected().length) break;
    for (const e of h.emitted) if (!e.settled) {
      e.settled = true;
      e.done();
    }
  }
  await h.buffer.close(Date.now() + 1000);
}

test('the reader never returns a record twice, never skips one, and resumes at the handed sequence', async (t) => {
  await fc.assert(
    fc.asyncProperty(fc.array(cmd, { minLength: 5, maxLength: 60 }), fc.constantFrom(400, 8000), fc.constantFrom(undefined, 150), async (cmds, segmentBytes, cacheBytes) => {
      await run(cmds, segmentBytes, cacheBytes);
    }),
    { numRuns: 80 },
  );
  t.pass();
});

test('segments are deleted once the saved sequence passed them, never before', async (t) => {
  const dir = tempBufferDir(t);
  const h = bufferOn(dir, 300);
  await h.buffer.open(0);
  collect(h, 1000);
  for (let i = 0; i < 20; i++) {
    let synced = false;
    h.buffer.append([entry(`a${i}`), entry(`b${i}`)], Date.now(), () => (synced = true));
    await until(() => synced, 'synced');
  }
  const segs = () => readdirSync(dir).filter((n) => segmentSeq(n) !== undefined);
  const before = segs().length;
  t.true(before >= 4, `segments: ${before}`);
  await until(() => h.emitted.reduce((n, e) => n + e.entries.length, 0) === 40, 'all read');
  // acknowledged but not saved: nothing goes
  for (const e of h.emitted) e.done();
  t.is(h.buffer.acked, 40);
  t.is(segs().length, before);
  h.buffer.saved(10);
  // deleted asynchronously: five segments of two records each are wholly at or below 10
  await until(() => segs().length <= before - 5, 'segments up to 10 deleted');
  await new Promise((r) => setTimeout(r, 50));
  const after10 = segs().map((n) => segmentSeq(n)!);
  // the segment that holds sequence 11 stays, every one wholly at or below 10 went
  const sorted = after10.sort((a, b) => a - b);
  t.true(sorted[0]! <= 11 && (sorted[1] === undefined || sorted[1] > 11), `kept ${JSON.stringify(sorted)}`);
  h.buffer.saved(40);
  // all saved: the segment being written goes too, and writing goes on in a new one
  await until(() => segs().length === 0, 'every segment deleted');
  t.is(h.counters.buffer_entries, 0);
  t.is(h.counters.buffer_bytes, 0);
  let synced = false;
  h.buffer.append([entry('later')], Date.now(), () => (synced = true));
  await until(() => synced, 'synced after');
  await until(() => h.emitted.at(-1)?.entries[0]?.message === 'later', 'read after');
  t.is(segs().length, 1);
  await h.buffer.close(Date.now() + 1000);
});

test('an append is acknowledged only once its records are in the segment file, after a sync', async (t) => {
  const dir = tempBufferDir(t);
  const h = bufferOn(dir, 1 << 20);
  await h.buffer.open(0);
  for (let round = 0; round < 20; round++) {
    const batch = [entry(`r${round}a`), entry(`r${round}b`)];
    const before = h.counters.buffer_syncs;
    let onDiskAtAck: Set<number> | undefined;
    h.buffer.append(batch, Date.now(), () => {
      onDiskAtAck = onDisk(dir);
      t.true(h.counters.buffer_syncs > before, 'the sync that covers it is over');
    });
    t.is(onDiskAtAck, undefined, 'never acknowledged within append');
    await until(() => onDiskAtAck !== undefined, 'acknowledged');
    for (const e of batch) t.true(onDiskAtAck!.has(seqOf(e.id!)), `record ${e.id} on disk when acknowledged`);
  }
  await h.buffer.close(Date.now() + 1000);
});

test('entries reach the reader before their sync; an id stamped before a crash never comes back on another entry', async (t) => {
  const dir = tempBufferDir(t);
  let h = bufferOn(dir, 1 << 20);
  await h.buffer.open(0);
  collect(h, 100);
  const first = [entry('first a')];
  let synced = false;
  h.buffer.append(first, Date.now(), () => (synced = true));
  await until(() => synced && h.emitted.length === 1, 'the first synced and read (the reader has its segment open)');
  // handed on with the write, not after its sync: within append, while its sync cannot be over
  const before = [entry('first b'), entry('first c')];
  let beforeSynced = false;
  h.buffer.append(before, Date.now(), () => (beforeSynced = true));
  t.false(beforeSynced);
  t.deepEqual(h.emitted.at(-1)?.entries.map((e) => e.message), ['first b', 'first c'], 'the reader had them before their sync');
  await until(() => beforeSynced, 'synced');
  before.unshift(...first);
  await h.buffer.close(Date.now() + 1000);
  // a crash that caught these records before their sync: they are gone from the disk, and
  // nothing acknowledged their sequences either
  for (const name of readdirSync(dir).filter((n) => segmentSeq(n) !== undefined)) truncateSync(join(dir, name), 0);
  h = bufferOn(dir, 1 << 20);
  await h.buffer.open(0);
  collect(h, 100);
  const after = [entry('second a'), entry('second b'), entry('second c')];
  h.buffer.append(after, Date.now());
  await until(() => h.emitted.length > 0, 'emitted after the restart');
  t.deepEqual(after.map((e) => seqOf(e.id!)), before.map((e) => seqOf(e.id!)), 'the sequences are written again');
  for (const e of after) t.false(before.some((b) => b.id === e.id), `${e.id} was not stamped before`);
  await h.buffer.close(Date.now() + 1000);
});

test('a segment wholly delivered before a restart is deleted when the saved sequence is handed at start, not at the next write', async (t) => {
  const dir = tempBufferDir(t);
  const segs = () => readdirSync(dir).filter((n) => segmentSeq(n) !== undefined);
  const h = bufferOn(dir, 1 << 20);
  await h.buffer.open(0);
  collect(h, 1000);
  let synced = false;
  h.buffer.append([entry('a'), entry('b'), entry('c')], Date.now(), () => (synced = true));
  await until(() => synced, 'synced');
  await until(() => h.emitted.reduce((n, e) => n + e.entries.length, 0) === 3, 'all read');
  for (const e of h.emitted) e.done();
  t.is(h.buffer.acked, 3);
  // the node stops before the worker learns that the checkpoint saved 3: the segment stays
  await h.buffer.close(Date.now() + 1000);
  t.is(segs().length, 1);

  // the next start: the checkpoint's sequence comes with the start, and again as saved
  const h2 = bufferOn(dir, 1 << 20);
  h2.buffer.saved(3);
  await h2.buffer.open(3);
  collect(h2, 1000);
  await until(() => segs().length === 0, `the delivered segment deleted at start (${segs().join(', ')} left)`);
  t.is(h2.counters.buffer_bytes, 0);
  t.is(h2.counters.buffer_entries, 0);
  // and a saved sequence that arrives after the start does it too
  await h2.buffer.close(Date.now() + 1000);
  const h3 = bufferOn(dir, 1 << 20);
  await h3.buffer.open(3);
  collect(h3, 1000);
  let more = false;
  h3.buffer.append([entry('d')], Date.now(), () => (more = true));
  await until(() => more && h3.emitted.length === 1, 'd read');
  h3.emitted[0]!.done();
  await h3.buffer.close(Date.now() + 1000);
  t.is(segs().length, 1);
  const h4 = bufferOn(dir, 1 << 20);
  await h4.buffer.open(4);
  collect(h4, 1000);
  await new Promise((r) => setTimeout(r, 20));
  t.is(segs().length, 1, 'nothing saved yet: kept');
  h4.buffer.saved(4);
  await until(() => segs().length === 0 && h4.counters.buffer_bytes === 0, 'deleted once saved at run time');
  let later = false;
  h4.buffer.append([entry('e')], Date.now(), () => (later = true));
  await until(() => later && h4.emitted.at(-1)?.entries[0]?.message === 'e', 'writing and reading go on in a new segment');
  await h4.buffer.close(Date.now() + 1000);
});

test('a saved sequence that arrives while the reader reads the segment deletes it when that read ends', async (t) => {
  const dir = tempBufferDir(t);
  const segs = () => readdirSync(dir).filter((n) => segmentSeq(n) !== undefined);
  const h = bufferOn(dir, 1 << 20);
  await h.buffer.open(0);
  collect(h, 1000);
  let appended = false;
  h.buffer.append([entry('a'), entry('b')], Date.now(), () => (appended = true));
  await until(() => appended && h.emitted.length > 0, 'a and b read');
  for (const b of h.emitted) b.done();
  await h.buffer.close(Date.now() + 1000);
  t.is(segs().length, 1, 'not saved yet: kept');

  const h2 = bufferOn(dir, 1 << 20);
  await h2.buffer.open(2);
  collect(h2, 1000); // the reader starts reading the segment now
  h2.buffer.saved(2);
  await until(() => segs().length === 0 && h2.counters.buffer_bytes === 0, 'deleted once the read ended');
  await h2.buffer.close(Date.now() + 1000);
});
