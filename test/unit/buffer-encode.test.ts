// The disk buffer's line encoder reuses the text of what consecutive entries share (time, node,
// source, level, fields): whatever the sequence of entries, each line must be exactly what
// `encodeEntry` writes for that entry alone, and `completed` must say the same. The records made
// of such lines read back as they went in, whatever characters they hold.

import test from 'ava';
import fc from 'fast-check';
import { RecordEncoder } from '../../src/buffer/encode.js';
import { encodeRecords, recordAt, sealRecords } from '../../src/buffer/record.js';
import { encodeEntry, LineEncoder } from '../../src/core/entry-line.js';
import type { Entry, Level } from '../../src/core/entry.js';

// few values each, so that consecutive entries often share them, and now and then do not
const text = fc.constantFrom('', 'app', 'a"b', 'back\\slash', 'line\nbreak', 'é€😀', '\ud800', 'x'.repeat(40));
const level = fc.constantFrom<Level | undefined>(undefined, 'INFO', 'ERROR');
const time = fc.constantFrom(1_700_000_000_000, 1_700_000_000_001, 1_700_000_001_000, Number.NaN, 8.64e15 + 1);
const value = fc.oneof(text, fc.constantFrom(0, -1, 1.5, true, null, undefined), fc.constant({ nested: 'o' }));
const fields = fc.option(fc.dictionary(fc.constantFrom('hostname', 'facility', 'procid', '"k"'), value, { maxKeys: 3 }), { nil: undefined });
const id = fc.option(fc.constantFrom('n.p.s.e.1', 'n.p.s.e.2', 'quote"id'), { nil: undefined });

// plain messages (written as they are) among those that need escaping or are not ASCII
const message = fc.oneof(text, fc.constantFrom('plain message 1', 'x'.repeat(150), ' !#[]~', ''), fc.string({ maxLength: 200 }));

const entry: fc.Arbitrary<Entry> = fc.record({ time, node: fc.option(text, { nil: undefined }), source: text, level, message, fields, id }).map((r) => {
  const e: Entry = { time: r.time, source: r.source, message: r.message };
  if (r.node !== undefined) e.node = r.node;
  if (r.level !== undefined) e.level = r.level;
  if (r.fields !== undefined) e.fields = r.fields;
  if (r.id !== undefined) e.id = r.id;
  return e;
});

test('each line is what encodeEntry writes for that entry alone, whatever came before', (t) => {
  fc.assert(
    fc.property(fc.array(entry, { minLength: 1, maxLength: 40 }), fc.boolean(), (entries, mutate) => {
      const encoder = new LineEncoder();
      const out = { completed: false };
      for (const e of entries) {
        const want = encodeEntry(e, 1_800_000_000_000, 'fallback', out);
        const plain = typeof e.id === 'string' && LineEncoder.isPlain(e.id);
        const got = encoder.encode(e, 1_800_000_000_000, 'fallback', plain);
        if (got !== want) throw new Error(`encoded ${got}, encodeEntry ${want}`);
        if (encoder.completed !== out.completed) throw new Error(`completed ${encoder.completed}, encodeEntry ${out.completed}`);
        // an object field changed in place between two entries must show in the next line
        if (mutate && e.fields && typeof e.fields.hostname === 'object' && e.fields.hostname !== null) (e.fields.hostname as Record<string, unknown>).nested = 'changed';
      }
    }),
    { numRuns: 2000 },
  );
  t.pass();
});

test('a fields object reused and changed in place between entries is encoded anew', (t) => {
  const encoder = new LineEncoder();
  const nested = { a: 1 };
  const shared = { hostname: 'h', meta: nested };
  const e1: Entry = { time: 1_700_000_000_000, source: 's', message: 'm', fields: shared };
  t.is(encoder.encode(e1, 0, 'f', false), encodeEntry(e1, 0, 'f', { completed: false }));
  nested.a = 2;
  shared.hostname = 'other';
  const e2: Entry = { time: 1_700_000_000_000, source: 's', message: 'm', fields: shared };
  const line = encoder.encode(e2, 0, 'f', false);
  t.is(line, encodeEntry(e2, 0, 'f', { completed: false }));
  t.true(line.includes('"hostname":"other"') && line.includes('"a":2'), line);
});

test('records of ASCII and of other payloads read back as their payloads and sequences', (t) => {
  const payload = fc.oneof(fc.string({ minLength: 2, maxLength: 60 }), fc.string({ unit: 'binary', minLength: 2, maxLength: 30 }));
  fc.assert(
    fc.property(fc.array(payload, { minLength: 1, maxLength: 20 }), fc.integer({ min: 1, max: 2 ** 40 }), (payloads, first) => {
      const buf = encodeRecords(payloads, first);
      let at = 0;
      for (let i = 0; i < payloads.length; i++) {
        const r = recordAt(buf, at);
        if (r.kind !== 'ok') throw new Error(`record ${i}: ${r.kind}`);
        if (r.seq !== first + i || buf.toString('utf8', r.start, r.end) !== Buffer.from(payloads[i]!).toString('utf8')) throw new Error(`record ${i} differs`);
        at = r.end;
      }
      if (at !== buf.length) throw new Error(`${buf.length - at} bytes after the last record`);
    }),
    { numRuns: 1000 },
  );
  t.pass();
});

/** The payloads of sealed records, in order, with their sequences. */
function payloadsOf(buf: Buffer): { seq: number; text: string }[] {
  const out: { seq: number; text: string }[] = [];
  for (let at = 0; at < buf.length; ) {
    const r = recordAt(buf, at);
    if (r.kind !== 'ok') throw new Error(`record at ${at}: ${r.kind}`);
    out.push({ seq: r.seq, text: buf.toString('utf8', r.start, r.end) });
    at = r.end;
  }
  return out;
}

test('RecordEncoder: each record is what encodeEntry writes for the entry, stamped with its sequence, and earlier records stay as they were until released', (t) => {
  const now = 1_800_000_000_000;
  const appendArb = fc.record({
    entries: fc.array(entry, { minLength: 1, maxLength: 30 }),
    // a stamped id (no id given) is the prefix and the sequence in base 36
    stamp: fc.array(fc.boolean(), { minLength: 30, maxLength: 30 }),
    release: fc.boolean(),
  });
  fc.assert(
    fc.property(fc.array(appendArb, { minLength: 1, maxLength: 12 }), fc.integer({ min: 1, max: 2 ** 40 }), fc.constantFrom('abc.', 'q"uote.'), (appends, start, prefix) => {
      const encoder = new RecordEncoder();
      const plainPrefix = LineEncoder.isPlain(prefix);
      let seq = start;
      // records not yet released, with the payloads they must still hold
      const held: { chunk: Buffer; want: { seq: number; text: string }[] }[] = [];
      for (const a of appends) {
        const entries = a.entries.map((e, i) => {
          const copy = { ...e };
          if (a.stamp[i]) delete copy.id;
          return copy;
        });
        const givenIds = entries.map((e) => e.id);
        const chunk = encoder.records(entries, seq, prefix, plainPrefix, now, 'fallback');
        const copy = Buffer.from(chunk);
        sealRecords(copy);
        const want = entries.map((e, i) => {
          const id = givenIds[i] ?? prefix + (seq + i).toString(36);
          if (e.id !== id) throw new Error(`entry ${i}: id ${String(e.id)}, want ${id}`);
          // the line of the entry as it is now (its id stamped), encoded alone
          const alone = { ...e, raw: undefined, rawNodeAt: undefined, rawIdAt: undefined };
          const line = encodeEntry(alone, now, 'fallback', { completed: false });
          // a line kept as raw must be that line
          if (e.raw !== undefined && e.raw !== line) throw new Error(`entry ${i}: raw ${e.raw}, line ${line}`);
          return { seq: seq + i, text: line };
        });
        t.deepEqual(payloadsOf(copy), want);
        held.push({ chunk, want });
        seq += entries.length;
        if (a.release) {
          // what is released may be written over; what is held may not
          encoder.release(held.splice(0, held.length - 1).map((h) => h.chunk));
        }
        for (const h of held) {
          const c = Buffer.from(h.chunk);
          sealRecords(c);
          if (JSON.stringify(payloadsOf(c)) !== JSON.stringify(h.want)) throw new Error('records held by the writer were written over');
        }
      }
    }),
    { numRuns: 300 },
  );
});

test('RecordEncoder: appends larger than a slab, and many in a row, keep every record whole', (t) => {
  const encoder = new RecordEncoder();
  const big = 'm'.repeat(60_000);
  const chunks: Buffer[] = [];
  let seq = 1;
  // 6 × 100 entries of 60 kB: 36 MB, past several 4 MiB slabs, half of them released on the way
  for (let round = 0; round < 6; round++) {
    const entries: Entry[] = Array.from({ length: 100 }, (_, i) => ({ time: 1_700_000_000_000, source: 's', message: `${round}-${i}-${big}` }));
    const chunk = encoder.records(entries, seq, 'p.', true, 0, 'f');
    seq += 100;
    chunks.push(chunk);
    if (round % 2 === 1) encoder.release(chunks.splice(0, 1));
  }
  let n = 0;
  for (const chunk of chunks) {
    const c = Buffer.from(chunk);
    sealRecords(c);
    for (const r of payloadsOf(c)) {
      const e = JSON.parse(r.text) as Entry;
      t.true(e.message.endsWith(big) && e.id === `p.${r.seq.toString(36)}`);
      n++;
    }
  }
  t.is(n, chunks.length * 100);
});
