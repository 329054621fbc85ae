// The disk buffer's line encoder reuses the text of what consecutive entries share (time, node,
// source, level, fields): whatever the sequence of entries, each line must be exactly what
// `encodeEntry` writes for that entry alone, and `completed` must say the same. The records made
// of such lines read back as they went in, whatever characters they hold.

import test from 'ava';
import fc from 'fast-check';
import { LineEncoder } from '../../src/buffer/encode.js';
import { encodeRecords, recordAt } from '../../src/buffer/record.js';
import { encodeEntry } from '../../src/chain/protocol.js';
import type { Entry, Level } from '../../src/core/entry.js';

// few values each, so that consecutive entries often share them, and now and then do not
const text = fc.constantFrom('', 'app', 'a"b', 'back\\slash', 'line\nbreak', 'é€😀', '\ud800', 'x'.repeat(40));
const level = fc.constantFrom<Level | undefined>(undefined, 'INFO', 'ERROR');
const time = fc.constantFrom(1_700_000_000_000, 1_700_000_000_001, 1_700_000_001_000, Number.NaN, 8.64e15 + 1);
const value = fc.oneof(text, fc.constantFrom(0, -1, 1.5, true, null, undefined), fc.constant({ nested: 'o' }));
const fields = fc.option(fc.dictionary(fc.constantFrom('hostname', 'facility', 'procid', '"k"'), value, { maxKeys: 3 }), { nil: undefined });
const id = fc.option(fc.constantFrom('n.p.s.e.1', 'n.p.s.e.2', 'quote"id'), { nil: undefined });

const entry: fc.Arbitrary<Entry> = fc.record({ time, node: fc.option(text, { nil: undefined }), source: text, level, message: text, fields, id }).map((r) => {
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
