// The line reader the file and stdin sources drive (src/lines/reader.ts): bytes in, entries out,
// with ids made from where each line ends, and the same entries however reads cut the bytes.

import test from 'ava';
import type { Entry } from '../../src/core/entry.js';
import type { LineCounters, Resume } from '../../src/lines/line.js';
import { multilineRules } from '../../src/lines/multiline.js';
import { LineReader, type LineReaderOptions } from '../../src/lines/reader.js';

const counters = (): LineCounters => ({ parse_errors: 0, truncated_lines: 0, multiline_entries: 0, multiline_splits: 0, multiline_timeouts: 0 });
const T = '2026-11-25T10:45:00.123456789Z';
const CRI = `${T} stdout F hello\n${T} stdout P one, \n${T} stderr P err, \n${T} stdout F two\n${T} stderr F done\n${T} stdout P open\n`;
const options = (over: Partial<LineReaderOptions> = {}): LineReaderOptions => ({
  format: 'cri',
  maxLineBytes: 1024,
  multiline: undefined,
  raw: false,
  name: '0.log',
  source: 'app',
  k8s: undefined,
  node: 'edge-1',
  ...over,
});

/** Reads `bytes` in chunks cut at `cuts`; the entries and the last mark. */
function read(opts: LineReaderOptions, bytes: Buffer, cuts: readonly number[]): { entries: Entry[]; mark: Resume | undefined } {
  const reader = new LineReader(opts, counters(), { offset: 0, idPrefix: 'P.' });
  const entries: Entry[] = [];
  let mark: Resume | undefined;
  let from = 0;
  for (const cut of [...cuts, bytes.length]) {
    mark = reader.push(bytes.subarray(from, cut), entries);
    from = cut;
  }
  return { entries, mark };
}

test('CRI lines: entries with the stream, the runtime time, the node and ids from line ends, whatever the reads', (t) => {
  const bytes = Buffer.from(CRI);
  const whole = read(options(), bytes, []);
  t.deepEqual(
    whole.entries.map((e) => [e.message, e.fields?.stream, e.node, e.id]),
    [
      ['hello', 'stdout', 'edge-1', `P.${(46).toString(36)}`],
      ['one, two', 'stdout', 'edge-1', `P.${(182).toString(36)}`],
      ['err, done', 'stderr', 'edge-1', `P.${(227).toString(36)}`],
    ],
  );
  t.is(whole.entries[0]!.time, Date.parse(T));
  // the open partial: a successor starts at it, knowing stderr was delivered
  t.deepEqual(whole.mark, { offset: 227, read: 272, streams: { stdout: 227 } });
  for (let cut = 1; cut < bytes.length; cut++) t.deepEqual(read(options(), bytes, [cut]), whole, `cut at byte ${cut}`);
});

test('flush emits the held partial line and open entries, then nothing is open', (t) => {
  const reader = new LineReader(options(), counters(), { offset: 0, idPrefix: undefined });
  const entries: Entry[] = [];
  reader.push(Buffer.from(CRI), entries);
  t.true(reader.holdsOpen());
  const mark = reader.flush(entries);
  t.deepEqual(mark, { offset: Buffer.byteLength(CRI) });
  t.is(entries.at(-1)!.message, 'open');
  t.false(reader.holdsOpen());
  t.is(reader.flush(entries), undefined, 'nothing left to flush');
  t.true(entries.every((e) => e.id === undefined), 'no prefix, no ids');
});

test('plain lines grouped by multiline keep the id of their first line; plain lines take the name as source', (t) => {
  const multiline = multilineRules('source', 'in', { preset: 'java', timeout_ms: 1000, max_lines: 500 }, 1024);
  const reader = new LineReader(options({ format: 'none', multiline, node: undefined, name: 'stdin', source: 'stdin' }), counters(), { offset: 0, idPrefix: 'S.' });
  const entries: Entry[] = [];
  reader.push(Buffer.from('Exception: boom\n\tat a.b(C.java:1)\nnext\n'), entries);
  t.deepEqual(
    entries.map((e) => [e.message, e.source, e.id]),
    [['Exception: boom\n\tat a.b(C.java:1)', 'stdin', `S.${(16).toString(36)}`]],
  );
  const plain = new LineReader(options({ format: 'none', name: 'app.log', source: 'container' }), counters(), { offset: 10, idPrefix: 'S.' });
  const out: Entry[] = [];
  t.deepEqual(plain.push(Buffer.from('x\npartial'), out), { offset: 12 });
  t.deepEqual(
    out.map((e) => [e.message, e.source, e.id]),
    [['x', 'app.log', 'S.c']],
  );
});
