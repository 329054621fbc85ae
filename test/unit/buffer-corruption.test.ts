// Disk buffer faults at start and while reading (issue 26, acceptance 2): the last record cut at
// every byte offset keeps every whole record; a flipped byte mid-segment skips the rest of that
// segment only; a missing segment and a stray file are tolerated. The buffer is opened as a
// worker opens it at start; a node starting on such a directory is in buffer-node.test.ts.

import test from 'ava';
import { cpSync, readdirSync, readFileSync, rmSync, statSync, truncateSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { segmentSeq } from '../../src/buffer/record.js';
import { bufferOn, collect, entry, seqOf, tempBufferDir, until } from '../helpers/disk-buffer.js';

const SEGMENT_BYTES = 1000;

/** A buffer directory with `n` records (a few segments), closed; returns it and each record's size. */
async function filled(t: { teardown(fn: () => void): void }, n: number): Promise<{ dir: string; sizes: number[] }> {
  const dir = tempBufferDir(t);
  const h = bufferOn(dir, SEGMENT_BYTES);
  await h.buffer.open(0);
  const sizes: number[] = [];
  for (let i = 0; i < n; i++) {
    let synced = false;
    const before = h.counters.buffer_bytes;
    h.buffer.append([entry(`record ${i} ${'x'.repeat(i % 7)}`)], Date.now(), () => (synced = true));
    await until(() => synced, 'synced');
    sizes.push(h.counters.buffer_bytes - before);
  }
  await h.buffer.close(Date.now() + 1000);
  return { dir, sizes };
}

const segments = (dir: string) =>
  readdirSync(dir)
    .filter((f) => segmentSeq(f) !== undefined)
    .sort();

/** Opens `dir` as at start and reads everything in it; returns the messages and the harness. */
async function readAll(dir: string, expect: number) {
  const h = bufferOn(dir, SEGMENT_BYTES);
  await h.buffer.open(0);
  collect(h, 10_000);
  const count = () => h.emitted.reduce((k, e) => k + e.entries.length, 0);
  await until(() => count() >= expect, `read ${count()} of ${expect}`);
  // nothing more comes (the reader is idle at the end of the last segment)
  await new Promise((r) => setTimeout(r, 30));
  const messages = h.emitted.flatMap((e) => e.entries.map((x) => x.message));
  await h.buffer.close(Date.now() + 1000);
  return { h, messages };
}

const messagesOf = (from: number, to: number) => Array.from({ length: to - from }, (_, i) => `record ${from + i} ${'x'.repeat((from + i) % 7)}`);

test('the last record cut at every byte offset: every whole record is kept, the tail is cut and counted', async (t) => {
  const n = 25;
  const { dir, sizes } = await filled(t, n);
  const last = segments(dir).at(-1)!;
  const lastSize = sizes.at(-1)!;
  const full = statSync(join(dir, last)).size;
  for (let k = 0; k < lastSize; k++) {
    const copy = `${dir}-cut${k}`;
    cpSync(dir, copy, { recursive: true });
    truncateSync(join(copy, last), full - lastSize + k);
    const { h, messages } = await readAll(copy, n - 1);
    t.deepEqual(messages, messagesOf(0, n - 1), `cut at ${k}`);
    t.is(h.counters.buffer_truncated_bytes, k, `cut at ${k}`);
    t.is(h.logs.filter((l) => l.msg === 'Disk buffer tail cut').length, k > 0 ? 1 : 0, `cut at ${k}`);
    t.is(h.counters.buffer_corrupt_records, 0);
    // appending goes on after the cut, with the next sequence
    const h2 = bufferOn(copy, SEGMENT_BYTES);
    await h2.buffer.open(0);
    const e = entry('after');
    let synced = false;
    h2.buffer.append([e], Date.now(), () => (synced = true));
    await until(() => synced, 'append after the cut');
    t.is(seqOf(e.id!), n, `cut at ${k}`);
    await h2.buffer.close(Date.now() + 1000);
    rmSync(copy, { recursive: true, force: true });
  }
});

test('a byte flipped in a middle record: ERROR, the rest of that segment skipped and counted, later segments read', async (t) => {
  const n = 40;
  const { dir, sizes } = await filled(t, n);
  const segs = segments(dir);
  t.true(segs.length >= 3, `segments: ${segs.length}`);
  const first = readFileSync(join(dir, segs[0]!));
  // the records of the first segment
  let inFirst = 0;
  for (let at = 0; at < first.length; at += sizes[inFirst++]!);
  t.true(inFirst >= 5, `records in the first segment: ${inFirst}`);
  const victim = Math.floor(inFirst / 2);
  const offset = sizes.slice(0, victim).reduce((a, b) => a + b, 0) + 16 + 5; // a payload byte
  first[offset] = first[offset]! ^ 0x20;
  writeFileSync(join(dir, segs[0]!), first);
  const { h, messages } = await readAll(dir, victim + (n - inFirst));
  t.deepEqual(messages, [...messagesOf(0, victim), ...messagesOf(inFirst, n)]);
  t.is(h.counters.buffer_corrupt_records, 1);
  const err = h.logs.find((l) => l.msg === 'Disk buffer corrupt record');
  t.truthy(err);
  t.is(err?.level, 'error');
  t.is(err?.segment, segs[0]);
  t.is(h.counters.buffer_truncated_bytes, 0);
});

test('a missing segment and a stray file are logged and tolerated', async (t) => {
  const n = 40;
  const { dir, sizes } = await filled(t, n);
  const segs = segments(dir);
  t.true(segs.length >= 3);
  const gone = segs[1]!;
  const from = segmentSeq(gone)!;
  const to = segmentSeq(segs[2]!)!;
  rmSync(join(dir, gone));
  writeFileSync(join(dir, 'notes.txt'), 'not a segment\n');
  t.true(sizes.length === n);
  const { h, messages } = await readAll(dir, n - (to - from));
  t.deepEqual(messages, [...messagesOf(0, from - 1), ...messagesOf(to - 1, n)]);
  const missing = h.logs.find((l) => l.msg === 'Disk buffer segment missing');
  t.like(missing, { level: 'warn', from, to: to - 1 });
  t.like(
    h.logs.find((l) => l.msg === 'Disk buffer stray file ignored'),
    { level: 'warn' },
  );
  t.is(h.counters.buffer_corrupt_records, 0);
});
