import test from 'ava';
import {
  ackLine,
  decodeEntry,
  encodeEntry,
  wireLine,
  errorLine,
  helloLine,
  LineSplitter,
  OK_LINE,
  parseHello,
  parseServerLine,
} from '../../src/chain/protocol.js';
import type { Entry } from '../../src/core/entry.js';

test('hello, ok, error and ack lines have the v1 shapes', (t) => {
  t.is(helloLine('edge-01'), '{"logrelay":1,"node":"edge-01"}\n');
  t.is(OK_LINE, '{"ok":1}\n');
  t.is(errorLine('bad'), '{"error":"bad"}\n');
  t.is(ackLine(42), '{"ack":42}\n');
  t.deepEqual(parseServerLine('{"ack":7}'), { kind: 'ack', n: 7 });
  t.deepEqual(parseServerLine('{"ok":1}'), { kind: 'ok' });
  t.deepEqual(parseServerLine('{"error":"no"}'), { kind: 'error', error: 'no' });
  t.is(parseServerLine('nonsense'), undefined);
});

test('parseHello accepts version 1 only', (t) => {
  t.deepEqual(parseHello('{"logrelay":1,"node":"a"}'), { ok: true, node: 'a' });
  t.false(parseHello('{"logrelay":99,"node":"a"}').ok);
  t.false(parseHello('not json').ok);
  t.false(parseHello('{"node":"a"}').ok);
  t.false(parseHello('[1]').ok);
});

test('encodeEntry writes section 4 keys in order with RFC 3339 time and carries id', (t) => {
  const out = { completed: false };
  const e: Entry = { time: Date.UTC(2024, 0, 2, 3, 4, 5, 6), node: 'n', source: 's', level: 'WARN', message: 'm', fields: { a: 1 }, id: 'x1' };
  t.is(encodeEntry(e, 0, 'p', out), '{"time":"2024-01-02T03:04:05.006Z","node":"n","source":"s","level":"WARN","message":"m","fields":{"a":1},"id":"x1"}');
  t.false(out.completed);
});

test('encodeEntry completes entries without time or source', (t) => {
  const out = { completed: false };
  const line = encodeEntry({ message: 'm' } as unknown as Entry, Date.UTC(2024, 0, 1), 'pipe', out);
  t.true(out.completed);
  t.is(line, '{"time":"2024-01-01T00:00:00.000Z","source":"pipe","message":"m"}');
});

test('decodeEntry round-trips and stamps node only when absent', (t) => {
  const e: Entry = { time: Date.UTC(2024, 0, 2), source: 's', level: 'INFO', message: 'hello', fields: { k: 'v' }, id: 'abc' };
  const line = encodeEntry(e, 0, 'p', { completed: false });
  t.deepEqual(decodeEntry(line, 'edge', 0, 'p'), { ...e, node: 'edge' });
  const withNode = encodeEntry({ ...e, node: 'origin' }, 0, 'p', { completed: false });
  t.is(decodeEntry(withNode, 'edge', 0, 'p')?.node, 'origin');
  t.is(decodeEntry('garbage', 'edge', 0, 'p'), undefined);
  t.is(decodeEntry('[1,2]', 'edge', 0, 'p'), undefined);
  t.is(decodeEntry('{"message":"x"', 'edge', 0, 'p'), undefined);
  const filled = decodeEntry('{"message":"x"}', undefined, 5, 'p');
  t.deepEqual(filled, { time: 5, source: 'p', message: 'x' });
});

test('LineSplitter yields whole lines across chunks, strips CR, and refuses over-long lines', (t) => {
  const lines: string[] = [];
  const s = new LineSplitter(16);
  t.true(s.push('ab\r\ncd', (l) => lines.push(l)));
  t.true(s.push('ef\n\n', (l) => lines.push(l)));
  t.deepEqual(lines, ['ab', 'cdef', '']);
  t.false(new LineSplitter(16).push(`${'x'.repeat(20)}\n`, () => {}));
  const partial = new LineSplitter(16);
  t.true(partial.push('x'.repeat(10), () => {}));
  t.false(partial.push('x'.repeat(10), () => {}));
  // bytes, not characters: 6 three-byte characters are 18 bytes
  t.false(new LineSplitter(16).push(`${'€'.repeat(6)}\n`, () => {}));
});

test('an entry time past the Date range is replaced, never thrown on, in both directions', (t) => {
  const out = { completed: false };
  const decoded = decodeEntry('{"time":1.7e18,"message":"x"}', 'edge', 5, 'p');
  t.deepEqual(decoded, { time: 5, node: 'edge', source: 'p', message: 'x' });
  t.is(encodeEntry({ time: 1.7e18, source: 's', message: 'x' }, Date.UTC(2024, 0, 1), 'p', out), '{"time":"2024-01-01T00:00:00.000Z","source":"s","message":"x"}');
  t.true(out.completed);
});

test('wireLine encodes an item once for every chain sink of the pipeline, but not a line it had to complete', (t) => {
  const out = { completed: false };
  const item = { entry: { time: Date.UTC(2024, 0, 1), source: 's', message: 'm', id: 'i1' } as Entry, wire: undefined as string | undefined };
  const first = wireLine(item, 0, 'p', out);
  t.is(first, '{"time":"2024-01-01T00:00:00.000Z","source":"s","message":"m","id":"i1"}');
  t.is(item.wire, first);
  item.entry.message = 'changed after the first sink';
  t.is(wireLine(item, 0, 'p', out), first, 'the second sink sends what the first sent');
  t.false(out.completed);
  const partial = { entry: { message: 'no time' } as unknown as Entry, wire: undefined as string | undefined };
  wireLine(partial, Date.UTC(2024, 0, 1), 'p', out);
  t.true(out.completed);
  t.is(partial.wire, undefined, 'a completed line is made (and counted) by each sink');
});
