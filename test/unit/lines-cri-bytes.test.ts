// CRI prefixes read from a chunk's bytes (src/lines/container.ts, DESIGN.md §21) agree with the
// same lines read as text: same logical lines, times, streams, nanoseconds and parse errors,
// for lines in and out of the format, across chunk boundaries and with characters outside ASCII;
// and the fields such a line makes, written by the json format without the escape check.

import test from 'ava';
import { formatJson } from '../../src/flow/format.js';
import type { Entry } from '../../src/core/entry.js';
import { LineAssembler } from '../../src/lines/assembler.js';
import { ContainerLines } from '../../src/lines/container.js';
import { entryOf, lineEntry } from '../../src/lines/entries.js';
import type { KubernetesMeta } from '../../src/lines/kubernetes.js';
import type { LineCounters, LogicalLine, Resume } from '../../src/lines/line.js';
import { LineSplitter } from '../../src/lines/splitter.js';

const zero = (): LineCounters => ({ parse_errors: 0, truncated_lines: 0, multiline_entries: 0, multiline_splits: 0, multiline_timeouts: 0 });

/** `text` read in chunks of `chunkBytes`: each chunk, where it ends in the text, and its lines as LineSplitter gives them. */
function* chunksOf(text: string, chunkBytes: number, max: number) {
  const splitter = new LineSplitter(max);
  const all = Buffer.from(text);
  for (let o = 0; o < all.length; o += chunkBytes) {
    const chunk = all.subarray(o, o + chunkBytes);
    const lines: string[] = [];
    const ends: number[] = [];
    const starts: number[] = [];
    splitter.push(chunk, lines, ends, starts);
    yield { chunk, readEnd: o + chunk.length, lines, ends, starts };
  }
}

/** `text` split in chunks of `chunkBytes`, through ContainerLines with the bytes (`withBytes`) or as text alone. */
function run(text: string, chunkBytes: number, withBytes: boolean, max = 1 << 20) {
  const counters = zero();
  const cri = new ContainerLines('cri', max, counters);
  const out: LogicalLine[] = [];
  let from = 0;
  let fromBytes = 0;
  for (const { chunk, lines, ends, starts } of chunksOf(text, chunkBytes, max)) {
    for (let i = 0; i < lines.length; i++) {
      const at = starts[i]!;
      if (at >= 0) {
        fromBytes++;
        // where a line begins in its chunk, its text begins
        if (!chunk.toString('utf8', at).startsWith(lines[i]!)) throw new Error(`line ${lines[i]} is not at ${at}`);
      }
      cri.push(lines[i]!, from, ends[i]!, out, withBytes ? chunk : undefined, withBytes ? at : -1);
      from = ends[i]!;
    }
  }
  cri.flush(from, out);
  return { out, counters, fromBytes };
}

const TIMES = [
  '2026-11-25T10:45:00.123456789Z',
  '2026-11-25T10:45:00.123000000Z',
  '2026-11-25T10:45:00.1Z',
  '2026-11-25T10:45:00.12Z',
  '2026-11-25T10:45:00Z',
  '2026-11-25T10:45:01.000000001+02:00',
  '2026-11-25T10:45:01.5-01:30',
  '2024-02-29T23:59:59.999Z',
  '0050-06-01T00:00:00.000001Z',
  // nine digits, read four at a time: none finer than ms, the last one finer, eight digits
  '2026-11-25T10:45:00.000000000Z',
  '2026-11-25T10:45:00.123400000Z',
  '2026-11-25T10:45:00.123000100Z',
  '2026-11-25T10:45:00.999000001-00:30',
  '2026-11-25T10:45:00.12345678Z',
  // not times: a fraction of none or ten digits, bad fields, a bad zone, no zone, lower case
  '2026-11-25T10:45:00.Z',
  '2026-11-25T10:45:00.1234567890Z',
  // a character just past the digits (`:` `;` `/`) in a word of the nine
  '2026-11-25T10:45:00.1234:6789Z',
  '2026-11-25T10:45:00.1234567;9Z',
  '2026-11-25T10:45:00.123/56789Z',
  '2026-11-25T10:45:00.12345678?Z',
  '2026-02-30T10:45:00Z',
  '2026-11-25T24:00:00Z',
  '2026-13-25T10:45:00Z',
  '2026-11-25T10:45:00+0200',
  '2026-11-25T10:45:00+02:0x',
  '2026-11-25T10:45:00',
  '2026-11-25t10:45:00z',
  '2026-11-25T10:45:0x.1Z',
];
const STREAMS = ['stdout', 'stderr', 'stdin', 'stdou'];
const TAGS = ['F', 'P', 'F:x', 'P:ü', 'Fx', 'X', ''];
const CONTENTS = [' hello', ' {"msg":"json","level":"warn"}', ' ünïcödé ☃', '', ' ', '  two spaces'];

/** Every combination of TIMES, STREAMS, TAGS and CONTENTS, a line each; some plain text, some ending in \r\n. */
function combinations(): { lines: string[]; text: string } {
  const lines: string[] = [];
  for (const time of TIMES) for (const stream of STREAMS) for (const tag of TAGS) for (const content of CONTENTS) lines.push(`${time} ${stream} ${tag}${content}`);
  // lines of the same stream end their partials in turn
  const text = lines.map((l, i) => (i % 7 === 0 ? `${l}\r\n` : i % 11 === 0 ? `plain ${i}\n\n` : `${l}\n`)).join('');
  return { lines, text };
}

test('a CRI line read from its bytes is read as from its text: every combination of times, streams, tags and contents', (t) => {
  const { lines, text } = combinations();
  for (const chunkBytes of [1 << 16, 4096, 333, 37]) {
    const bytes = run(text, chunkBytes, true);
    const chars = run(text, chunkBytes, false);
    t.deepEqual(bytes.out, chars.out, `chunks of ${chunkBytes}`);
    t.deepEqual(bytes.counters, chars.counters, `chunks of ${chunkBytes}`);
    // chunks shorter than most lines leave the text to read most of them
    if (chunkBytes > 300) t.true(bytes.fromBytes > lines.length / 2, `most lines lie whole in a chunk of ${chunkBytes}`);
  }
  const { out, counters } = run(text, 4096, true);
  t.true(counters.parse_errors > 0 && out.some((l) => l.stream === 'stderr' && l.nanos !== undefined && l.time !== undefined));
});

test('seconds read from bytes are remembered per reader, and a line of another second is read anew', (t) => {
  const text = ['2026-11-25T10:45:00.5Z stdout F a', '2026-11-25T10:45:01.5Z stdout F b', '2026-11-25T10:45:00.25Z stdout F c', '1999-12-31T23:59:59.999999999Z stderr F d'].join('\n') + '\n';
  const { out } = run(text, 1 << 16, true);
  t.deepEqual(
    out.map((l) => [l.text, l.time, l.nanos]),
    [
      ['a', Date.parse('2026-11-25T10:45:00.5Z'), undefined],
      ['b', Date.parse('2026-11-25T10:45:01.5Z'), undefined],
      ['c', Date.parse('2026-11-25T10:45:00.25Z'), undefined],
      ['d', Date.parse('1999-12-31T23:59:59.999Z'), '1999-12-31T23:59:59.999999999Z'],
    ],
  );
});

test('the fields of a container line are written as JSON.stringify writes them, without the escape check', (t) => {
  const { out } = run('2026-11-25T10:45:00.123456789Z stderr F a "quoted" line\n2026-11-25T10:45:00.5+02:00 stdout F {"msg":"m","x":"y\\"z"}\n', 1 << 16, true);
  for (const [i, line] of out.entries()) {
    const e = entryOf(line, 'c', 0, false, i === 0 ? { namespace: 'n"s', pod: 'p', pod_uid: 'u', container: 'c', restart_count: 0 } : undefined);
    t.true(formatJson(e).endsWith(`,"fields":${JSON.stringify(e.fields)}}`), formatJson(e));
  }
  // fields that came from the line's own JSON are checked as ever
  const e = entryOf(out[1]!, 'c', 0, false, undefined);
  t.is(e.plainFields, undefined);
  t.is(formatJson(e), JSON.stringify({ time: new Date(e.time).toISOString(), source: 'c', message: 'm', fields: { x: 'y"z', stream: 'stdout' } }));
});

test('entries made as the container stage completes lines (pushMade) are the entries of its logical lines, with their positions and ids', (t) => {
  const { text } = combinations();
  const k8s: KubernetesMeta = { namespace: 'ns', pod: 'p', pod_uid: 'u', container: 'c', restart_count: 1 };
  for (const [format, raw, meta] of [['cri', false, undefined], ['cri', true, k8s], ['auto', false, k8s]] as const) {
    for (const chunkBytes of [1 << 16, 333]) {
      const max = 200;
      const counters = [zero(), zero()];
      const viaLines = new LineAssembler({ format, maxLineBytes: max, multiline: undefined }, counters[0]!);
      const made = new LineAssembler({ format, maxLineBytes: max, multiline: undefined }, counters[1]!);
      const want: { entry: Entry; start: number; end: number; idAt: number }[] = [];
      const got: typeof want = [];
      const marks: [Resume, Resume][] = [];
      let from = 0;
      for (const { chunk, readEnd, lines, ends, starts } of chunksOf(text, chunkBytes, max)) {
        const out: LogicalLine[] = [];
        viaLines.push(lines, ends, from, 7, out, chunk, starts);
        for (const l of out) want.push({ entry: entryOf(l, 'src', 7, raw, meta), start: l.start, end: l.end, idAt: l.idAt });
        made.pushMade(lines, ends, from, got, (line, start, end, idAt, stream, time, nanos) => ({ entry: lineEntry(line, stream, time, nanos, 'src', 7, raw, meta), start, end, idAt }), chunk, starts);
        if (ends.length > 0) from = ends.at(-1)!;
        marks.push([viaLines.resume(readEnd), made.resume(readEnd)]);
      }
      const what = `${format}, raw ${raw}, chunks of ${chunkBytes}`;
      t.true(want.length > 500, what);
      t.deepEqual(got, want, what);
      t.deepEqual(counters[1], counters[0], what);
      t.deepEqual(
        marks.map((m) => m[1]),
        marks.map((m) => m[0]),
        what,
      );
    }
  }
});
