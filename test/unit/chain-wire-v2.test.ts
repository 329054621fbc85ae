// Chain protocol version 2 frames (core/entry-frame.ts, core/frame-reader.ts): every entry comes out of a frame as it comes
// out of a version 1 line, whatever the cut of the stream into reads; malformed frames are parse
// errors; frames over the bound end the stream; both encodings of an item are made once and kept.

import test from 'ava';
import { acceptFor, helloLine, okLine, parseServerLine } from '../../src/chain/protocol.js';
import { decodeEntry, encodeEntry } from '../../src/core/entry-line.js';
import { eachRun, encodeAhead, encodeFor, encodeFrames, FRAME_REPORT, type FramedItem, framedItem, PROTOCOL_V2, reportFrame } from '../../src/core/entry-frame.js';
import { decodeEntryFrame, type Frame, frameIdOf, FrameReader, reportOfFrame } from '../../src/core/frame-reader.js';
import type { Entry } from '../../src/core/entry.js';
import { randomText as textFrom, xorshift } from '../helpers/random.js';

const rand = xorshift(0x5eed1234);
const randomText = (odd: boolean, max?: number): string => textFrom(rand, odd, max);

/** Entries of every shape: odd characters, empty and missing parts, fields, no time. */
function randomEntry(): Entry {
  const odd = rand() < 0.3;
  const message = rand() < 0.2 ? `msg="${randomText(false)}" ${randomText(odd)}` : randomText(odd, rand() < 0.1 ? 400 : 40);
  const e: Entry = { time: rand() < 0.05 ? Number.NaN : (rand() < 0.05 ? -1 : 1) * Math.floor(rand() * 4e12) + (rand() < 0.1 ? 0.5 : 0), source: rand() < 0.05 ? '' : randomText(odd), message };
  if (rand() < 0.4) e.node = randomText(odd);
  if (rand() < 0.5) e.level = (['TRACE', 'DEBUG', 'INFO', 'WARN', 'ERROR', 'FATAL'] as const)[Math.floor(rand() * 6)];
  if (rand() < 0.1) e.fields = rand() < 0.3 ? {} : { k: randomText(odd), n: [1, { x: randomText(odd) }], b: true };
  if (rand() < 0.9) e.id = randomText(odd);
  return e;
}

/** The entry as version 1 carries it: encoded as a line and decoded, without what decodeEntry keeps of the line. */
function viaV1(e: Entry, linkNode: string | undefined, now: number): Entry | undefined {
  const got = decodeEntry(encodeEntry(e, now, 'p', { completed: false }), linkNode, now, 'p');
  if (!got) return got;
  const { raw: _raw, rawNodeAt: _at, rawIdAt: _id, ...rest } = got;
  return rest;
}

/** Reads `bytes` cut into reads at `cuts`, decoding every entry frame. */
function readAll(bytes: Buffer, cuts: readonly number[], linkNode: string | undefined, now: number, max = 1 << 20): { entries: (Entry | undefined)[]; ok: boolean } {
  const reader = new FrameReader(max);
  const entries: (Entry | undefined)[] = [];
  let from = 0;
  let ok = true;
  for (const cut of [...cuts, bytes.length]) {
    if (!reader.push(bytes.subarray(from, cut), (f) => entries.push(decodeEntryFrame(f, linkNode, now, 'p')))) {
      ok = false;
      break;
    }
    from = cut;
  }
  return { entries, ok };
}

const framed = (entries: readonly Entry[]): FramedItem[] => entries.map((e) => framedItem(e, '', undefined));

function bytesOf(items: readonly FramedItem[], version = PROTOCOL_V2): Buffer {
  const runs: Buffer[] = [];
  eachRun(version, items, 0, items.length, (b) => runs.push(b));
  return Buffer.concat(runs);
}

test('an entry comes out of a version 2 frame as it comes out of a version 1 line, for entries of every shape and any cut of the stream', (t) => {
  const now = Date.UTC(2025, 5, 6, 7, 8, 9, 10);
  const entries = Array.from({ length: 5_000 }, randomEntry);
  const items = framed(entries);
  // in batches, as sinks write them
  for (let at = 0; at < items.length; at += 700) encodeFrames(items, at, Math.min(items.length, at + 700), now, 'p');
  const bytes = bytesOf(items);
  for (const linkNode of ['edge-1', undefined]) {
    const want = entries.map((e) => viaV1(e, linkNode, now));
    // reads of every size, ASCII or not, cutting frames anywhere (inside a length, a string, a
    // character); the smallest on the first 300 entries
    const head = bytesOf(items.slice(0, 300));
    for (const size of [1, 3, 7, 64, 1000, 65536, bytes.length]) {
      const whole = size < 7 ? head : bytes;
      const cuts: number[] = [];
      for (let c = size; c < whole.length; c += size) cuts.push(c);
      const { entries: got, ok } = readAll(whole, cuts, linkNode, now);
      t.true(ok);
      t.deepEqual(got, size < 7 ? want.slice(0, 300) : want, `reads of ${size} bytes, link node ${linkNode}`);
    }
  }
});

test('ASCII frames come out whole from reads far larger than one text (an inflated link, an http_chain body), frames larger than one text too', (t) => {
  const now = Date.UTC(2025, 5, 6, 7, 8, 9, 10);
  const ascii = (i: number, n: number) => Array.from({ length: n }, (_, k) => String.fromCharCode(33 + ((i * 7 + k) % 90))).join('');
  // 3,000 entries of 40–400 ASCII bytes, and every 500th a message of 70–150 KiB
  const entries: Entry[] = Array.from({ length: 3000 }, (_, i) => {
    const e: Entry = { time: Date.UTC(2024, 0, 1) + i, source: `/var/log/app-${i % 3}.log`, message: ascii(i, i % 500 === 0 ? 70_000 + i * 27 : 40 + ((i * 131) % 360)), id: `AbC.${i.toString(36)}` };
    if (i % 4 === 0) e.node = `edge-${i % 5}`;
    if (i % 9 === 0) e.fields = { k: ascii(i, 20) };
    return e;
  });
  const items = framed(entries);
  encodeFrames(items, 0, items.length, now, 'p');
  const bytes = bytesOf(items);
  t.true(bytes.length > 4 * 256 * 1024);
  const want = entries.map((e) => viaV1(e, 'edge-1', now));
  for (const size of [65536, 100_003, 262144, bytes.length]) {
    const cuts: number[] = [];
    for (let c = size; c < bytes.length; c += size) cuts.push(c);
    const { entries: got, ok } = readAll(bytes, cuts, 'edge-1', now);
    t.true(ok);
    t.deepEqual(got, want, `reads of ${size} bytes`);
  }
});

test('a decoded entry has its keys in one order, whatever its shape (time, source, message, node, level, fields, id)', (t) => {
  const now = Date.UTC(2025, 5, 6, 7, 8, 9, 10);
  const base: Entry = { time: now, source: 'app.log', message: 'hello' };
  const shapes: Entry[] = [
    { ...base, node: 'edge', id: 'i.1' },
    { ...base, id: 'i.2' },
    { ...base, node: 'edge', level: 'WARN', id: 'i.3' },
    { ...base, node: 'edge', fields: { a: 1 }, id: 'i.4' },
    { ...base, node: 'edge' },
    { ...base },
  ];
  const items = framed(shapes);
  encodeFrames(items, 0, items.length, now, 'p');
  for (const linkNode of ['relay-a', undefined]) {
    const { entries } = readAll(bytesOf(items), [], linkNode, now);
    const order = ['time', 'source', 'message', 'node', 'level', 'fields', 'id'];
    for (const e of entries) {
      const keys = Object.keys(e!);
      t.deepEqual(keys, order.filter((k) => keys.includes(k)), JSON.stringify(e));
    }
    t.deepEqual(entries[0], { time: now, source: 'app.log', message: 'hello', node: 'edge', id: 'i.1' });
  }
});

test('a frame carries the message as its bytes: UTF-8, nothing escaped, smaller than the line', (t) => {
  const e: Entry = { time: Date.UTC(2024, 0, 1), source: 'app.log', level: 'INFO', message: 'GET /x msg="a b" täglich ✓ \\ tab\there', id: 'AbCdEfGhIjKlMnOp.2s' };
  const [item] = framed([e]);
  encodeFrames([item!], 0, 1, 0, 'p');
  const frame = item!.frameBuf!.subarray(item!.frameAt, item!.frameEnd);
  t.true(frame.subarray(frame.length - Buffer.byteLength(e.message)).equals(Buffer.from(e.message)), 'the message is the frame’s last bytes, as UTF-8');
  t.deepEqual(frame.subarray(0, 5), length7(frame.length - 5), 'length-prefixed');
  t.is(frame[5], 1, 'an entry frame');
  t.is(frame[6]! & 8, 0, 'not flagged ASCII: its message is not');
  t.true(frame.length < Buffer.byteLength(encodeEntry(e, 0, 'p', { completed: false })) + 1);
  const { entries } = readAll(frame, [], undefined, 0);
  t.deepEqual(entries, [e]);
});

test('encodeFrames writes an item once for every sink that sends version 2, keeps its version 1 line, and counts completed entries for each', (t) => {
  const items = framed([{ time: Date.UTC(2024, 0, 1), source: 's', message: 'm', id: 'i1' }, { message: 'no time' } as unknown as Entry]);
  t.is(encodeFor(PROTOCOL_V2, items, 0, 2, Date.UTC(2024, 0, 1), 'p'), 1);
  const first = items[0]!.frameBuf;
  t.truthy(first);
  t.is(items[1]!.frameBuf, first, 'one Buffer for the batch');
  t.is(items[1]!.frameAt, items[0]!.frameEnd, 'frames lie next to each other');
  t.is(items[0]!.wireBuf, undefined, 'no line written for a version 2 link');
  items[0]!.entry.message = 'changed after the first sink';
  t.is(encodeFor(PROTOCOL_V2, items, 0, 2, 0, 'p'), 1, 'the second sink counts the completed entry too');
  t.is(items[0]!.frameBuf, first, 'and sends what the first wrote');
  const runs: Buffer[] = [];
  eachRun(PROTOCOL_V2, items, 0, 2, (b) => runs.push(b));
  t.is(runs.length, 1, 'adjacent frames go out as one slice');
  // a link of the same pipeline that speaks version 1 (an old relay) gets lines, and the frames stay
  t.is(encodeFor(1, items, 0, 2, Date.UTC(2024, 0, 1), 'p'), 1);
  t.regex(bytesOf(items, 1).toString(), /^\{"time":"2024-01-01T00:00:00.000Z","source":"s","message":"changed after the first sink","id":"i1"\}\n\{"time":"2024-01-01T00:00:00.000Z","source":"p","message":"no time"\}\n$/);
  t.is(items[0]!.frameBuf, first);
  const ahead = framed([{ time: 1, source: 's', message: 'm' }]);
  encodeAhead(ahead, (1 << 1) | (1 << PROTOCOL_V2), 0, 'p');
  t.truthy(ahead[0]!.wireBuf, 'written ahead as a line');
  t.truthy(ahead[0]!.frameBuf, 'and as a frame');
});

test('frameIdOf reads the id before the rest is decoded', (t) => {
  const items = framed([{ time: 1, source: 's', message: 'm', id: 'AbCdEfGhIjKlMnOp.2s' }, { time: 1, source: 's', message: 'm' }]);
  encodeFrames(items, 0, 2, 0, 'p');
  const ids: (string | undefined)[] = [];
  new FrameReader(1024).push(bytesOf(items), (f) => ids.push(frameIdOf(f)));
  t.deepEqual(ids, ['AbCdEfGhIjKlMnOp.2s', undefined]);
});

/** `n` as version 2 writes lengths: 5 bytes of 7 bits, most significant first. */
function length7(n: number): Buffer {
  return Buffer.from([Math.floor(n / 2 ** 28) & 0x7f, (n >>> 21) & 0x7f, (n >>> 14) & 0x7f, (n >>> 7) & 0x7f, n & 0x7f]);
}

/** One frame of `body` (kind first), length-prefixed. */
const frameOf = (body: Buffer): Buffer => Buffer.concat([length7(body.length), body]);

/** An entry frame's body from its parts: kind, flags, level, time (8 bytes of 7 bits), strings with their lengths, the message last. */
function entryBody(flags: number, level: number, time: number, strings: readonly string[], message: string): Buffer {
  const head = Buffer.from([1, flags, level]);
  const hi = Math.floor(time / 2 ** 28);
  const lo = time - hi * 2 ** 28;
  const t = Buffer.concat([length7(hi).subarray(1), length7(lo).subarray(1)]);
  const parts = strings.map((s) => Buffer.concat([length7(Buffer.byteLength(s)), Buffer.from(s)]));
  return Buffer.concat([head, t, ...parts, Buffer.from(message)]);
}

test('malformed frames decode to nothing (a parse error each); the frames after them are read', (t) => {
  const good = entryBody(1, 3, 5, ['id', 'src'], 'ok');
  const frames = [
    good,
    Buffer.from([9, 0, 0]), // an unknown kind
    entryBody(64, 0, 5, ['src'], 'unknown flag'),
    entryBody(0, 7, 5, ['src'], 'unknown level'),
    Buffer.concat([entryBody(1, 0, 5, [], '').subarray(0, 11), Buffer.from([0, 0, 0, 99, 65])]), // an id longer than the frame
    entryBody(4, 0, 5, ['src', '[1,2]'], 'fields not an object'),
    entryBody(4, 0, 5, ['src', '{"a":'], 'fields not JSON'),
    entryBody(0, 0, 5, [], '').subarray(0, 6), // cut inside its head
    Buffer.concat([Buffer.from([1, 0, 0]), Buffer.alloc(8, 0xff), length7(0), Buffer.from('no time, no source: completed')]),
    good,
  ];
  const { entries, ok } = readAll(Buffer.concat(frames.map(frameOf)), [], 'edge', 42);
  t.true(ok);
  t.deepEqual(entries, [
    { time: 5, source: 'src', level: 'INFO', message: 'ok', id: 'id', node: 'edge' },
    undefined,
    undefined,
    undefined,
    undefined,
    undefined,
    undefined,
    undefined,
    { time: 42, source: 'p', message: 'no time, no source: completed', node: 'edge' },
    { time: 5, source: 'src', level: 'INFO', message: 'ok', id: 'id', node: 'edge' },
  ]);
});

test('a frame longer than the bound ends the stream, whether its length comes whole or cut', (t) => {
  const small = frameOf(entryBody(0, 0, 1, ['s'], 'x'.repeat(10)));
  const big = frameOf(entryBody(0, 0, 1, ['s'], 'x'.repeat(200)));
  t.true(readAll(Buffer.concat([small, small]), [], undefined, 0, 100).ok);
  for (const cuts of [[], [small.length + 2], [small.length + 4], [3]]) {
    const { entries, ok } = readAll(Buffer.concat([small, big, small]), cuts, undefined, 0, 100);
    t.false(ok, `cut at ${cuts.join(',')}`);
    t.is(entries.length, 1, "the frame before it is read");
  }
});

test('a report frame carries the report object; the reader tells it by its kind', (t) => {
  const report = { node: 'edge-1', via: [], pipelines: [{ name: 'p', state: 'running' }], note: 'täglich' };
  const kinds: number[] = [];
  const got: unknown[] = [];
  new FrameReader(1024).push(reportFrame(report), (f: Frame) => {
    kinds.push(f.buf[f.at]!);
    got.push(reportOfFrame(f));
    t.is(decodeEntryFrame(f, undefined, 0, 'p'), undefined, 'never an entry');
  });
  t.deepEqual(kinds, [FRAME_REPORT]);
  t.deepEqual(got, [report]);
});

test('version 2 is negotiated through the hello offer: accepted only when offered and supported, and a peer that knows no offer answers {"ok":1}', (t) => {
  t.is(helloLine('edge', { version: PROTOCOL_V2 }), '{"logrelay":1,"node":"edge","offer":{"version":2}}\n');
  const hello = JSON.parse(helloLine('edge', { version: PROTOCOL_V2, compression: ['gzip'] })) as { offer: unknown };
  t.deepEqual(acceptFor(hello.offer, { version: [PROTOCOL_V2], compression: ['gzip'] }), { version: 2, compression: 'gzip' });
  t.deepEqual(acceptFor(hello.offer, { compression: ['gzip'] }), { compression: 'gzip' }, 'a source without version 2 leaves it out');
  t.deepEqual(acceptFor({ version: 3 }, { version: [PROTOCOL_V2] }), {}, 'a version it does not know is declined');
  t.deepEqual(acceptFor(undefined, { version: [PROTOCOL_V2] }), {}, 'no offer, version 1');
  t.deepEqual(parseServerLine(okLine({ version: PROTOCOL_V2 }).trim()), { kind: 'ok', accept: { version: 2 } });
  t.deepEqual(parseServerLine('{"ok":1}'), { kind: 'ok', accept: {} });
});
