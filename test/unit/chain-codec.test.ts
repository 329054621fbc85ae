import test from 'ava';
import fc from 'fast-check';
import {
  ackLine,
  acceptFor,
  errorLine,
  helloLine,
  isReportLine,
  reportLine,
  reportOfLine,
  LineSplitter,
  OK_LINE,
  okLine,
  parseHello,
  parseServerLine,
} from '../../src/chain/protocol.js';
import { decodeEntry, encodeEntry, trailingIdOf } from '../../src/core/entry-line.js';
import { type Entry, normaliseLevel } from '../../src/core/entry.js';
import { formatJson } from '../../src/flow/format.js';
import { eachWireRun, encodeWire, type WireItem, wireItem } from '../../src/core/entry-wire.js';
import { xorshift } from '../helpers/random.js';

/** The entry without what `decodeEntry` keeps of a canonical line. */
function withoutRaw(e: Entry | undefined): Entry | undefined {
  if (!e) return e;
  const { raw: _raw, rawNodeAt: _at, rawIdAt: _id, ...rest } = e;
  return rest;
}

test('hello, ok, error and ack lines have the v1 shapes', (t) => {
  t.is(helloLine('edge-01'), '{"logrelay":1,"node":"edge-01"}\n');
  t.is(OK_LINE, '{"ok":1}\n');
  t.is(errorLine('bad'), '{"error":"bad"}\n');
  t.is(ackLine(42), '{"ack":42}\n');
  t.deepEqual(parseServerLine('{"ack":7}'), { kind: 'ack', n: 7 });
  t.deepEqual(parseServerLine('{"ok":1}'), { kind: 'ok', accept: {} });
  t.deepEqual(parseServerLine('{"error":"no"}'), { kind: 'error', error: 'no' });
  t.is(parseServerLine('nonsense'), undefined);
});

test('hello offer and accept: only what is offered and supported is accepted, unknown features ignored, no offer reads as before', (t) => {
  t.is(helloLine('e', { report: 1, compression: undefined }), '{"logrelay":1,"node":"e","offer":{"report":1}}\n');
  t.is(helloLine('e', { report: undefined }), '{"logrelay":1,"node":"e"}\n');
  const hello = parseHello('{"logrelay":1,"node":"e","offer":{"report":1,"teleport":["x"]}}');
  t.true(hello.ok);
  const accept = acceptFor(hello.ok ? hello.offer : {}, { report: [1] });
  t.deepEqual(accept, { report: 1 });
  t.is(okLine(accept), '{"ok":1,"accept":{"report":1}}\n');
  t.is(okLine(acceptFor({}, { report: [1] })), '{"ok":1}\n');
  t.deepEqual(acceptFor({ report: 2 }, { report: [1] }), {}, 'a report version this node does not speak is not accepted');
  t.deepEqual(parseServerLine('{"ok":1,"accept":{"report":1}}'), { kind: 'ok', accept: { report: 1 } });
  // report control lines are told from entry lines by their start
  const line = reportLine({ node: 'e', interval_ms: 1000, pipelines: [], via: [] });
  t.true(isReportLine(line.trimEnd()));
  t.deepEqual(reportOfLine(line.trimEnd()), { node: 'e', interval_ms: 1000, pipelines: [], via: [] });
  t.false(isReportLine('{"time":"2024-01-01T00:00:00.000Z","source":"a","message":"{\\"report\\":1}"}'));
});

test('hello offer and accept: one feature per key, the first offered choice supported, unknown keys and junk ignored', (t) => {
  t.is(helloLine('e', {}), '{"logrelay":1,"node":"e"}\n', 'nothing offered: the v1 hello');
  t.is(helloLine('e', { compression: [] }), '{"logrelay":1,"node":"e"}\n');
  t.is(helloLine('e', { compression: ['zstd', 'gzip'], report: [1] }), '{"logrelay":1,"node":"e","offer":{"compression":["zstd","gzip"],"report":[1]}}\n');
  const offer = (parseHello('{"logrelay":1,"node":"e","offer":{"compression":["zstd","gzip"],"report":[1],"teleport":["yes"]}}') as { offer: unknown }).offer;
  t.deepEqual(acceptFor(offer, { compression: ['gzip'] }), { compression: 'gzip' });
  t.deepEqual(acceptFor(offer, { compression: ['gzip'], report: [1] }), { compression: 'gzip', report: 1 });
  t.deepEqual(acceptFor(offer, { compression: ['lz4'] }), {}, 'nothing in common: declined');
  t.deepEqual(acceptFor(undefined, { compression: ['gzip'] }), {}, 'no offer');
  t.deepEqual(acceptFor('junk', { compression: ['gzip'] }), {});
  t.deepEqual(acceptFor({ compression: 'gzip' }, { compression: ['gzip'] }), { compression: 'gzip' }, 'one value offered is one choice');
  t.deepEqual(acceptFor({ compression: 'gzip', report: 1 }, { compression: ['gzip'], report: [1] }), { compression: 'gzip', report: 1 }, 'one choice alone');
  t.deepEqual(acceptFor({ compression: { gzip: true } }, { compression: ['gzip'] }), {}, 'a choice is a string or a number');
  t.is(helloLine('e', { report: 1 }), '{"logrelay":1,"node":"e","offer":{"report":1}}\n');
  t.is(okLine({}), '{"ok":1}\n');
  t.is(okLine({ compression: 'gzip' }), '{"ok":1,"accept":{"compression":"gzip"}}\n');
  t.deepEqual(parseServerLine('{"ok":1,"accept":{"compression":"gzip","x":{"y":1}}}'), { kind: 'ok', accept: { compression: 'gzip' } });
});

test('parseHello accepts version 1 only', (t) => {
  t.deepEqual(parseHello('{"logrelay":1,"node":"a"}'), { ok: true, node: 'a', offer: undefined });
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
  t.deepEqual(withoutRaw(decodeEntry(line, 'edge', 0, 'p')), { ...e, node: 'edge' });
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

test('LineSplitter: any cut of a text into chunks gives the lines of the text whole, CR LF, empty lines and a last line without newline included', (t) => {
  const piece = fc.constantFrom('a', 'line', '\n', '\r\n', '\r', '€', 'x'.repeat(30), '\n\n');
  fc.assert(
    fc.property(fc.array(piece, { maxLength: 40 }), fc.array(fc.nat(200), { maxLength: 10 }), (parts, cutsAt) => {
      const text = parts.join('');
      // what splitting the whole text at once gives
      const want = text.split('\n').map((l) => (l.endsWith('\r') ? l.slice(0, -1) : l));
      const last = want.pop()!;
      if (last !== '') want.push(last);
      const cuts = [...new Set(cutsAt.map((c) => c % (text.length + 1)))].sort((a, b) => a - b);
      const got: string[] = [];
      const splitter = new LineSplitter(1 << 20);
      let from = 0;
      for (const c of [...cuts, text.length]) {
        if (!splitter.push(text.slice(from, c), (l) => got.push(l))) throw new Error('refused');
        from = c;
      }
      splitter.end((l) => got.push(l));
      if (JSON.stringify(got) !== JSON.stringify(want)) throw new Error(`${JSON.stringify(text)} cut at ${cuts.join(',')}: ${JSON.stringify(got)}, want ${JSON.stringify(want)}`);
    }),
    { numRuns: 3000 },
  );
  t.pass();
});

test('an entry time past the Date range is replaced, never thrown on, in both directions', (t) => {
  const out = { completed: false };
  const decoded = decodeEntry('{"time":1.7e18,"message":"x"}', 'edge', 5, 'p');
  t.deepEqual(decoded, { time: 5, node: 'edge', source: 'p', message: 'x' });
  t.is(encodeEntry({ time: 1.7e18, source: 's', message: 'x' }, Date.UTC(2024, 0, 1), 'p', out), '{"time":"2024-01-01T00:00:00.000Z","source":"s","message":"x"}');
  t.true(out.completed);
});

test('encodeWire writes an item once for every chain sink of the pipeline; a completed line counts for each', (t) => {
  const item = (entry: Entry): WireItem => wireItem(entry, '', undefined);
  const items = [item({ time: Date.UTC(2024, 0, 1), source: 's', message: 'm', id: 'i1' }), item({ message: 'no time' } as unknown as Entry)];
  t.is(encodeWire(items, 0, 2, Date.UTC(2024, 0, 1), 'p'), 1);
  const bytes = () => items.map((x) => x.wireBuf!.toString('utf8', x.wireAt, x.wireEnd));
  t.deepEqual(bytes(), ['{"time":"2024-01-01T00:00:00.000Z","source":"s","message":"m","id":"i1"}\n', '{"time":"2024-01-01T00:00:00.000Z","source":"p","message":"no time"}\n']);
  const first = items[0]!.wireBuf;
  t.is(items[1]!.wireBuf, first, 'one Buffer for the batch');
  t.is(items[1]!.wireAt, items[0]!.wireEnd, 'lines lie next to each other');
  items[0]!.entry.message = 'changed after the first sink';
  t.is(encodeWire(items, 0, 2, 0, 'p'), 1, 'the second sink counts the completed line too');
  t.is(items[0]!.wireBuf, first, 'and sends what the first wrote');
  const runs: string[] = [];
  eachWireRun(items, 0, 2, (b) => runs.push(b.toString()));
  t.deepEqual(runs, [bytes().join('')], 'adjacent lines go out as one slice');
});

test('encodeWire writes the bytes of encodeEntry, for entries of every shape and received canonical lines', (t) => {
  const out = { completed: false };
  const now = Date.UTC(2025, 5, 6, 7, 8, 9, 10);
  const items: WireItem[] = [];
  const want: string[] = [];
  for (let i = 0; i < 5_000; i++) {
    const odd = rand() < 0.3;
    // a fifth quote words as log lines do (msg="…"): quotes the only thing to escape, mostly
    const message = rand() < 0.2 ? `${randomText(false)}"${randomText(false)}"${rand() < 0.5 ? '' : `"${randomText(odd)}`}` : randomText(odd);
    const e: Entry = { time: rand() < 0.05 ? Number.NaN : Math.floor(rand() * 4e12), source: rand() < 0.05 ? '' : randomText(odd), message };
    if (rand() < 0.4) e.node = randomText(odd);
    if (rand() < 0.5) e.level = (['TRACE', 'DEBUG', 'INFO', 'WARN', 'ERROR', 'FATAL'] as const)[Math.floor(rand() * 6)];
    if (rand() < 0.1) e.fields = rand() < 0.3 ? {} : { k: randomText(odd), n: [1, { x: randomText(odd) }] };
    if (rand() < 0.9) e.id = randomText(odd);
    // half of them as a relay has them: decoded from the line another node sent
    const entry = rand() < 0.5 ? decodeEntry(encodeEntry(e, now, 'p', out), rand() < 0.5 ? 'edge-1' : undefined, now, 'p')! : e;
    want.push(`${encodeEntry(entry, now, 'p', out)}\n`);
    items.push(wireItem(entry, '', undefined));
  }
  for (let at = 0; at < items.length; at += 700) encodeWire(items, at, Math.min(items.length, at + 700), now, 'p');
  const got: Buffer[] = [];
  eachWireRun(items, 0, items.length, (b) => got.push(b));
  t.true(Buffer.concat(got).equals(Buffer.from(want.join(''))));
  t.true(items.some((x) => x.entry.raw !== undefined));
});

// A canonical line (what entryJson writes, with plain strings and an id) is read without JSON.parse
// and sent on as it came: both must give exactly what the general path gives for the same line.
const rand = xorshift(0x2545f491);
const PLAIN = ['a', 'Z', '0', ' ', '/', '{', '}', ':', ',', "'", 'é', '€', '😀', '\u2028', '<'];
const ODD = ['"', '\\', '\n', '\t', '\u0000', '\u001f'];
function randomText(odd: boolean): string {
  const n = Math.floor(rand() * 12);
  let s = '';
  for (let i = 0; i < n; i++) s += odd && rand() < 0.2 ? ODD[Math.floor(rand() * ODD.length)] : PLAIN[Math.floor(rand() * PLAIN.length)];
  return s;
}

/** What the general path makes of a line: JSON.parse and the §9 rules, written out here. */
function reference(line: string, linkNode: string | undefined, now: number, fallback: string): Entry | undefined {
  let o: Record<string, unknown>;
  try {
    o = JSON.parse(line) as Record<string, unknown>;
  } catch {
    return undefined;
  }
  const t = typeof o.time === 'string' ? Date.parse(o.time) : typeof o.time === 'number' ? o.time : Number.NaN;
  const e: Entry = { time: Number.isNaN(t) ? now : t, source: typeof o.source === 'string' && o.source !== '' ? o.source : fallback, message: String(o.message ?? '') };
  const node = typeof o.node === 'string' && o.node !== '' ? o.node : linkNode;
  if (node) e.node = node;
  const level = normaliseLevel(o.level);
  if (level) e.level = level;
  if (o.fields) e.fields = o.fields as Record<string, unknown>;
  if (typeof o.id === 'string') e.id = o.id;
  return e;
}

test('a canonical line decodes as JSON.parse would, and is sent on and formatted exactly as the entry encoded anew', (t) => {
  const out = { completed: false };
  let canonical = 0;
  let quotedCanonical = 0;
  for (let i = 0; i < 20_000; i++) {
    const odd = rand() < 0.2;
    // a fifth quote words as log lines do (msg="…"): canonical still, unless something else needs escaping
    const quoted = rand() < 0.2;
    const message = quoted ? `${randomText(false)}"${randomText(false)}"${rand() < 0.7 ? '' : randomText(odd)}` : randomText(odd);
    const e: Entry = { time: Math.floor(rand() * 4e12), source: rand() < 0.05 ? '' : randomText(odd) || 's', message };
    if (rand() < 0.4) e.node = randomText(odd);
    if (rand() < 0.5) e.level = (['TRACE', 'DEBUG', 'INFO', 'WARN', 'ERROR', 'FATAL'] as const)[Math.floor(rand() * 6)];
    if (rand() < 0.1) e.fields = { k: randomText(odd) };
    if (rand() < 0.9) e.id = randomText(odd);
    const line = encodeEntry(e, 0, 'p', out);
    const linkNode = rand() < 0.7 ? 'edge-1' : undefined;
    const got = decodeEntry(line, linkNode, 7, 'fallback');
    const want = reference(line, linkNode, 7, 'fallback');
    if (got?.raw !== undefined) canonical++;
    if (got?.raw !== undefined && quoted) quotedCanonical++;
    t.deepEqual(withoutRaw(got), want, line);
    const anew = withoutRaw(got)!;
    t.is(encodeEntry(got!, 0, 'p', out), encodeEntry(anew, 0, 'p', out), line);
    t.is(formatJson(got!), formatJson(anew), line);
  }
  t.true(canonical > 8_000, `${canonical} of 20,000 lines took the canonical path`);
  t.true(quotedCanonical > 1_000, `${quotedCanonical} lines with quoted messages took the canonical path`);
});

test('only canonical lines keep raw: any other form takes the general path', (t) => {
  const ok = '{"time":"2024-01-02T03:04:05.006Z","source":"s","level":"INFO","message":"m","id":"i"}';
  const stamped = decodeEntry(ok, 'edge', 0, 'p')!;
  t.is(stamped.raw, ok);
  t.is(encodeEntry(stamped, 0, 'p', { completed: false }), '{"time":"2024-01-02T03:04:05.006Z","node":"edge","source":"s","level":"INFO","message":"m","id":"i"}');
  t.is(formatJson(stamped), '{"time":"2024-01-02T03:04:05.006Z","node":"edge","source":"s","level":"INFO","message":"m"}');
  const unstamped = decodeEntry(ok, undefined, 0, 'p')!;
  t.is(encodeEntry(unstamped, 0, 'p', { completed: false }), ok);
  for (const line of [
    '{"time":"2024-01-02T03:04:05Z","source":"s","message":"m","id":"i"}', // no milliseconds
    '{"time":"2024-02-30T03:04:05.006Z","source":"s","message":"m","id":"i"}', // no such day
    '{"time":"2024-01-02T03:04:05.006Z","node":"","source":"s","message":"m","id":"i"}',
    '{"time":"2024-01-02T03:04:05.006Z","source":"","message":"m","id":"i"}',
    '{"time":"2024-01-02T03:04:05.006Z","message":"m","id":"i"}',
    '{"time":"2024-01-02T03:04:05.006Z","source":"s","level":"info","message":"m","id":"i"}',
    '{"time":"2024-01-02T03:04:05.006Z","source":"s","message":"m\\u0041","id":"i"}',
    '{"time":"2024-01-02T03:04:05.006Z","source":"s","message":"m","fields":{"a":1},"id":"i"}',
    '{"time":"2024-01-02T03:04:05.006Z","source":"s","message":"m"}',
    '{"time":"2024-01-02T03:04:05.006Z","source":"s","message":"m","id":"i"} ',
    '{"time":"2024-01-02T03:04:05.006Z","source":"s","id":"i","message":"m"}',
    // quotes are the one escape a canonical line may hold, and only in its message
    '{"time":"2024-01-02T03:04:05.006Z","source":"s\\"t","message":"m","id":"i"}',
    '{"time":"2024-01-02T03:04:05.006Z","node":"n\\"","source":"s","message":"m","id":"i"}',
    '{"time":"2024-01-02T03:04:05.006Z","source":"s","message":"m","id":"i\\""}',
    '{"time":"2024-01-02T03:04:05.006Z","source":"s","message":"a \\"q\\" \\\\","id":"i"}',
    '{"time":"2024-01-02T03:04:05.006Z","source":"s","message":"m\\\\\\"","id":"i"}',
  ]) {
    const e = decodeEntry(line, 'edge', 0, 'p');
    t.truthy(e, line);
    t.is(e!.raw, undefined, line);
    t.deepEqual(e, reference(line, 'edge', 0, 'p'), line);
  }
  const quoted = decodeEntry('{"time":"2024-01-02T03:04:05.006Z","source":"s","message":"msg=\\"a b\\" x","id":"i"}', 'edge', 0, 'p')!;
  t.is(quoted.message, 'msg="a b" x');
  t.truthy(quoted.raw, 'a message with quotes only stays canonical');
  t.is(decodeEntry('{"time":"2024-01-02T03:04:05.006Z","source":"s","message":"m","id":"i"', 'edge', 0, 'p'), undefined);
  t.is(decodeEntry('{"time":"2024-01-02T03:04:05.006Z","source":"s","message":"m\u0001","id":"i"}', 'edge', 0, 'p'), undefined);
});

test('trailingIdOf reads the id a line ends with exactly as JSON.parse does, or gives up', (t) => {
  const out = { completed: false };
  let read = 0;
  const lines: string[] = [];
  for (let i = 0; i < 20_000; i++) {
    const odd = rand() < 0.3;
    const e: Entry = { time: Math.floor(rand() * 4e12), source: randomText(odd) || 's', message: randomText(odd) };
    if (rand() < 0.1) e.fields = { k: randomText(odd) };
    const kind = rand();
    // ids as nodes stamp them, too long ones, and any text at all
    if (kind < 0.5) e.id = `AbCdEfGhIjKlMnOp.${Math.floor(rand() * 1e12).toString(36)}`;
    else if (kind < 0.55) e.id = 'x'.repeat(35 + Math.floor(rand() * 10));
    else if (kind < 0.9) e.id = randomText(odd);
    let line = encodeEntry(e, 0, 'p', out);
    // and lines that only look like entries: cut, spliced, an id key inside a string, a nested id
    const r = rand();
    if (r < 0.05) line = line.slice(Math.floor(rand() * line.length));
    else if (r < 0.1) line = `{"message":${JSON.stringify(`x","id":"${randomText(odd)}`)}}`;
    else if (r < 0.15) line = `{"fields":{"id":${JSON.stringify(randomText(odd))}},"message":"m"}`;
    else if (r < 0.2) line = `{"message":"m","id":${JSON.stringify(randomText(odd))}} `;
    else if (r < 0.25) line = `{"id":"first","message":"m","id":${JSON.stringify(randomText(odd))}}`;
    lines.push(line);
  }
  for (const line of lines) {
    let parsed: { id?: unknown } | undefined;
    try {
      parsed = JSON.parse(line) as { id?: unknown };
    } catch {
      parsed = undefined;
    }
    const id = trailingIdOf(line);
    if (id === undefined) continue;
    read++;
    // a line that is no JSON but starts and ends like an entry is judged by its id (documented)
    if (parsed) t.is(parsed.id, id, line);
  }
  t.true(read > 8_000, `${read} of 20,000 ids read ahead of decoding`);
  // every id a logrelay node writes (printable ASCII, at most 40 characters) is read
  t.is(trailingIdOf('{"time":"2024-01-02T03:04:05.006Z","source":"s","message":"m","id":"AbCdEfGhIjKlMnOp.1x2y3"}'), 'AbCdEfGhIjKlMnOp.1x2y3');
  t.is(trailingIdOf(`{"message":"m","id":"${'i'.repeat(40)}"}`), 'i'.repeat(40));
  t.is(trailingIdOf(`{"message":"m","id":"${'i'.repeat(41)}"}`), undefined);
  t.is(trailingIdOf('{"message":"m","id":""}'), undefined);
  t.is(trailingIdOf('{"message":"m","id":"\\u0041"}'), undefined);
  t.is(trailingIdOf('{"message":"m","id":"é"}'), undefined);
});
