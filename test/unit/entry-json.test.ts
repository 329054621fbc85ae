// The hand-written entry encoder must write exactly what JSON.stringify writes for the same
// object, key order included: checked on fixed cases and on random strings drawn from every
// corner of UTF-16 (controls, quotes, backslashes, lone and paired surrogates, U+2028).

import test from 'ava';
import fc from 'fast-check';
import { entryJson, fieldsJson, isoTime, jsonString } from '../../src/core/entry-json.js';
import { type Entry, type Level, type PlainFields, plainFieldsEntry } from '../../src/core/entry.js';
import { xorshift } from '../helpers/random.js';

/** What JSON.stringify makes of the same entry, keys in §4 order. */
function reference(e: Entry, withId: boolean): string {
  const o: Record<string, unknown> = { time: new Date(e.time).toISOString() };
  if (e.node) o.node = e.node;
  if (e.source) o.source = e.source;
  if (e.level) o.level = e.level;
  o.message = e.message;
  if (e.fields && Object.keys(e.fields).length > 0) o.fields = e.fields;
  if (withId && typeof e.id === 'string') o.id = e.id;
  return JSON.stringify(o);
}

// A small deterministic generator, so a failure can be replayed.
const rand = xorshift(0x9e3779b9);
const POOL = ['"', '\\', '\n', '\r', '\t', '\u0000', '\u001f', '\u007f', '\u2028', '\u2029', '\ud800', '\udfff', '😀', 'é', '€', '/', '<', ' ', 'a', 'Z', '0', '{', '}'];
function randomString(): string {
  const n = Math.floor(rand() * 24);
  let s = '';
  for (let i = 0; i < n; i++) {
    const r = rand();
    s += r < 0.5 ? POOL[Math.floor(rand() * POOL.length)] : String.fromCharCode(Math.floor(rand() * 0x10000));
  }
  return s;
}

test('jsonString equals JSON.stringify on 100,000 random strings', (t) => {
  let mismatches = 0;
  for (let i = 0; i < 100_000; i++) {
    const s = randomString();
    if (jsonString(s) !== JSON.stringify(s)) mismatches++;
  }
  // and strings whose only escapes are quotes (msg="…"), maybe one other escape after them
  const QUOTED = ['"', 'a', 'é', '€', ' ', '<', '/', "'"];
  for (let i = 0; i < 50_000; i++) {
    let s = '';
    for (let n = Math.floor(rand() * 30); n > 0; n--) s += QUOTED[Math.floor(rand() * QUOTED.length)];
    if (rand() < 0.2) s += POOL[Math.floor(rand() * POOL.length)] + s;
    if (jsonString(s) !== JSON.stringify(s)) mismatches++;
  }
  t.is(mismatches, 0);
});

test('entryJson equals JSON.stringify of the same object and parses back to it, on 20,000 random entries', (t) => {
  const levels: (Level | undefined)[] = ['INFO', 'ERROR', undefined];
  for (let i = 0; i < 20_000; i++) {
    const e: Entry = {
      time: Math.floor(rand() * 4e12),
      source: rand() < 0.1 ? '' : randomString(),
      message: randomString(),
    };
    if (rand() < 0.5) e.node = randomString();
    const level = levels[Math.floor(rand() * levels.length)];
    if (level) e.level = level;
    if (rand() < 0.3) e.fields = rand() < 0.2 ? {} : { [randomString()]: randomString(), n: rand(), nested: { a: [randomString()] } };
    if (rand() < 0.5) e.id = randomString();
    const withId = rand() < 0.5;
    const got = entryJson(e, e.time, e.source, e.message, withId);
    const want = reference(e, withId);
    if (got !== want) {
      t.fail(`entry ${i}: ${JSON.stringify(got)} != ${JSON.stringify(want)}`);
      return;
    }
    t.deepEqual(JSON.parse(got), JSON.parse(want));
  }
  t.pass();
});

test('isoTime remembers the last time but never mixes two up', (t) => {
  t.is(isoTime(0), '1970-01-01T00:00:00.000Z');
  t.is(isoTime(0), '1970-01-01T00:00:00.000Z');
  t.is(isoTime(1), '1970-01-01T00:00:00.001Z');
  t.is(isoTime(0), '1970-01-01T00:00:00.000Z');
});

test('isoTime writes what toISOString writes for times within one second and across seconds, fractions and negatives included', (t) => {
  const next = xorshift(4242);
  let bad = 0;
  for (let i = 0; i < 50_000; i++) {
    const r = next();
    // mostly close to the one before (a runtime's times), sometimes anywhere in the Date range
    const ms = r < 0.9 ? 1_700_000_000_000 + Math.floor(next() * 3000) : r < 0.95 ? (next() - 0.5) * 1.7e16 : -Math.floor(next() * 3000) - 0.5 * (i % 2);
    if (isoTime(ms) !== new Date(ms).toISOString()) bad++;
  }
  t.is(bad, 0);
});

test('fieldsJson writes what JSON.stringify writes: values it leaves out, numbers, nesting, key order, escapes', (t) => {
  const cases: Record<string, unknown>[] = [
    {},
    { a: undefined },
    { stream: 'stdout', time_nanos: '2026-11-25T10:45:00.123456789Z', k8s: { namespace: 'shop', restart_count: 0 } },
    { 2: 'two', 1: 'one', b: 'x', a: null, f: () => 1, n: Number.NaN, d: new Date(0), q: 'say "hi"\n', s: Symbol('s') },
    { status: 503, bytes: 0, neg: -0, inf: Number.POSITIVE_INFINITY, ninf: -Infinity, big: 1e21, small: 5e-7, frac: -0.1, max: Number.MAX_VALUE, yes: true, no: false, boxed: Object(7) as unknown },
  ];
  for (const c of cases) t.is(fieldsJson(c), JSON.stringify(c));
  for (const n of [0, 1, -1, 0.5, 123456789012345680000, 1e-7, Number.MIN_VALUE, Number.EPSILON, 2 ** 53, -(2 ** 31), Math.PI]) t.is(fieldsJson({ n }), JSON.stringify({ n }), String(n));
});

test('fieldsJson writes what JSON.stringify writes for entries one after the other whose keys and values repeat at their places or not (what it remembers of the last one)', (t) => {
  // small pools, so that a key or value is often the last one at its place, often not, and often
  // at another place; equal texts made anew (a parser's captures are new strings each time)
  const key = fc.constantFrom('client', 'method', 'path', 'status', '', 'k8s.pod', 'say "hi"', '2', '10', 'a\nb');
  const text = fc.oneof(
    fc.constantFrom('GET', 'HTTP/1.1', '-', '', 'stdout', 'stderr', 'q"uote', 'back\\slash', 'tab\t', '\u2028', '\ud800', 'é').map((v) => (v + ' ').slice(0, -1)),
    fc.string({ unit: 'binary', maxLength: 8 }),
  );
  const value = fc.oneof(text, text, fc.integer(), fc.constantFrom(true, false, null, undefined, Number.NaN), fc.dictionary(key, text, { maxKeys: 2 }));
  const fields = fc.dictionary(key, value, { maxKeys: 8 });
  fc.assert(
    fc.property(fc.array(fields, { minLength: 1, maxLength: 20 }), (seq) => {
      for (const f of seq) t.is(fieldsJson(f), JSON.stringify(f));
    }),
    { numRuns: 2_000 },
  );
  t.pass();
});

test('a container line\'s entry (plainFieldsEntry) is written as JSON.stringify writes it, in every shape of its fields', (t) => {
  const nanos = ['2026-11-25T10:45:00.123456789Z', '2026-11-25T10:45:00.000000001+02:00', undefined];
  const k8s = [{ namespace: 'n"s', pod: 'p\\q', pod_uid: 'u', container: 'c', restart_count: 3 }, { namespace: 'a', pod: 'b', container: 'c' }, undefined];
  let shapes = 0;
  for (const stream of ['stdout', 'stderr'] as const)
    for (const time_nanos of nanos)
      for (const k of k8s)
        for (const message of ['INFO plain text', 'no level, "quoted" \u2028 ünï', '']) {
          const fields: PlainFields = { stream };
          if (time_nanos !== undefined) fields.time_nanos = time_nanos;
          if (k !== undefined) fields.k8s = k;
          const e = plainFieldsEntry(message, 'container', 1_764_067_500_123, fields);
          t.true(e.plainFields);
          t.is(entryJson(e, e.time, e.source, e.message, false), reference(e, false), JSON.stringify(fields));
          shapes++;
        }
  t.is(shapes, 2 * 3 * 3 * 3);
});

test('entryJson writes what JSON.stringify writes for entries one after the other whose time, node, source and level repeat or not (what it remembers of the last ones)', (t) => {
  // small pools, so that a node or source is often the last one, often not; equal texts made anew
  // (a received entry's strings are its own slices); messages plain, quoted or needing escapes
  const anew = (v: string) => (v + ' ').slice(0, -1);
  const name = fc.oneof(fc.constantFrom('edge', 'relay-a', '', 'n"ode', 'back\\slash', 'é', '\u2028').map(anew), fc.string({ unit: 'binary', maxLength: 6 }));
  const level = fc.constantFrom<Level | undefined>(undefined, 'TRACE', 'DEBUG', 'INFO', 'WARN', 'ERROR', 'FATAL');
  const message = fc.oneof(fc.constantFrom('plain text', '', 'say "hi"', 'tab\there', 'ünï', '\ud800', 'x'.repeat(200)).map(anew), fc.string({ unit: 'binary', maxLength: 12 }));
  const time = fc.oneof(fc.constantFrom(1_764_067_500_123, 1_764_067_500_124, 1_764_067_501_123), fc.integer({ min: 0, max: 4_102_444_800_000 }));
  const entry = fc.record({ time, node: fc.option(name, { nil: undefined }), source: name, level, message, id: fc.option(name, { nil: undefined }) });
  fc.assert(
    fc.property(fc.array(entry, { minLength: 1, maxLength: 20 }), fc.boolean(), (seq, withId) => {
      for (const raw of seq) {
        const e: Entry = { time: raw.time, source: raw.source, message: raw.message };
        if (raw.node !== undefined) e.node = raw.node;
        if (raw.level !== undefined) e.level = raw.level;
        if (raw.id !== undefined) e.id = raw.id;
        t.is(entryJson(e, e.time, e.source, e.message, withId), reference(e, withId));
      }
    }),
    { numRuns: 2_000 },
  );
  t.pass();
});
