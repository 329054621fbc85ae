// A version 2 frame carried on undecoded (passFrame, core/frame-reader.ts: a relay) must leave the
// node as the decode path does: decoded (decodeEntryFrame) and framed again (encodeFrames). For
// the frames a node writes the bytes are the same, whatever the cut of the stream into reads and
// whatever else is written into the slab meanwhile; for any frame (bytes changed at random) the
// next node decodes the same entry from either, and a frame the decode refuses is refused.

import test from 'ava';
import { encodeFrames, type FramedItem, framedItem, LENGTH_BYTES, PROTOCOL_V2, eachRun } from '../../src/core/entry-frame.js';
import { passFrame, type PassedItem } from '../../src/core/frame-pass.js';
import { decodeEntryFrame, type Frame, frameIdOf, FrameReader } from '../../src/core/frame-reader.js';
import type { Entry } from '../../src/core/entry.js';
import { randomText as textFrom, xorshift } from '../helpers/random.js';

const rand = xorshift(0x9a55f4a3);
const randomText = (odd: boolean, max?: number): string => textFrom(rand, odd, max);
const asciiText = (n: number): string => Array.from({ length: n }, () => String.fromCharCode(32 + Math.floor(rand() * 95))).join('');

/** Entries of every shape: ASCII and not, odd characters, empty and missing parts, fields (empty too), no time, no id, long messages. */
function randomEntry(): Entry {
  const odd = rand() < 0.3;
  const ascii = rand() < 0.5;
  const message = ascii ? asciiText(rand() < 0.05 ? 5000 : Math.floor(rand() * 300)) : randomText(odd, rand() < 0.1 ? 400 : 40);
  const e: Entry = { time: rand() < 0.05 ? Number.NaN : (rand() < 0.05 ? -1 : 1) * Math.floor(rand() * 4e12), source: rand() < 0.05 ? '' : ascii ? 'app.log' : randomText(odd), message };
  if (rand() < 0.4) e.node = rand() < 0.1 ? '' : ascii ? 'edge-7' : randomText(odd);
  if (rand() < 0.5) e.level = (['TRACE', 'DEBUG', 'INFO', 'WARN', 'ERROR', 'FATAL'] as const)[Math.floor(rand() * 6)];
  if (rand() < 0.15) e.fields = rand() < 0.3 ? {} : { k: randomText(odd), n: [1, { x: randomText(odd) }], b: true, z: -0.5 };
  if (rand() < 0.85) e.id = ascii ? `hYb5xJehzuffdZ9I.${Math.floor(rand() * 1e6).toString(36)}` : randomText(odd);
  return e;
}

/** The frames of `entries` as a node writes them (in sink batches), one stream. */
function framesOf(entries: readonly Entry[], now: number): Buffer {
  const items = entries.map((e) => framedItem(e, '', undefined));
  for (let at = 0; at < items.length; at += 700) encodeFrames(items, at, Math.min(items.length, at + 700), now, 'edge-pipeline');
  return bytesOf(items);
}

function bytesOf(items: readonly FramedItem[]): Buffer {
  const runs: Buffer[] = [];
  eachRun(PROTOCOL_V2, items, 0, items.length, (b) => runs.push(Buffer.from(b)));
  return Buffer.concat(runs);
}

/** Reads `bytes` in reads of `size` bytes, each frame handed to `onFrame`. */
function read(bytes: Buffer, size: number, onFrame: (f: Frame) => void): void {
  const reader = new FrameReader(1 << 20);
  for (let from = 0; from < bytes.length; from += size) t_ok(reader.push(bytes.subarray(from, from + size), onFrame));
}
function t_ok(ok: boolean): void {
  if (!ok) throw new Error('the reader refused the stream');
}

/** An id sequence as a pipeline stamps them. */
const ids = (prefix: string): (() => string) => {
  let n = 0;
  return () => `${prefix}.${(n++).toString(36)}`;
};

/**
 * The decode path of a relay for the frames of `bytes`: each decoded as the link's node receives
 * it, stamped an id where it has none, framed again. Undefined for a frame the decode refuses.
 */
function viaDecode(bytes: Buffer, size: number, node: string | undefined, now: number, nextId: (() => string) | undefined): (Buffer | undefined)[] {
  const out: (Buffer | undefined)[] = [];
  read(bytes, size, (f) => {
    const e = decodeEntryFrame(f, node, now, 'relay', frameIdOf(f));
    if (!e) {
      out.push(undefined);
      return;
    }
    if (nextId && e.id === undefined) e.id = nextId();
    const item = framedItem(e, e.message, undefined);
    encodeFrames([item], 0, 1, now, 'relay');
    out.push(Buffer.from(item.frameBuf!.subarray(item.frameAt, item.frameEnd)));
  });
  return out;
}

/** The same frames carried on by passFrame; `meanwhile` runs after each (another writer of the slab). */
function viaPass(bytes: Buffer, size: number, node: string | undefined, now: number, nextId: (() => string) | undefined, meanwhile?: () => void): (PassedItem | undefined)[] {
  const out: (PassedItem | undefined)[] = [];
  read(bytes, size, (f) => {
    out.push(passFrame(f, node, now, 'relay', nextId, undefined));
    meanwhile?.();
  });
  return out;
}

const frameBytes = (item: PassedItem): Buffer => Buffer.from(item.frameBuf!.subarray(item.frameAt, item.frameEnd));

/** What the next node decodes from a frame (a whole frame's bytes). */
function decodeAtNext(frame: Buffer): Entry | undefined {
  let e: Entry | undefined;
  new FrameReader(1 << 20).push(frame, (f) => (e = decodeEntryFrame(f, 'next-hop', 7, 'collector')));
  return e;
}

test('a frame carried on has the bytes of the frame the decode path writes for it, for entries of every shape, reads of any size, with or without a link node and id stamping', (t) => {
  const now = Date.UTC(2026, 10, 28, 5, 0, 0, 123);
  const entries = Array.from({ length: 3000 }, randomEntry);
  const bytes = framesOf(entries, now - 1000);
  let compared = 0;
  for (const node of ['edge-1', 'ü-edge', undefined]) {
    for (const size of [1, 7, 1000, 16384, 65536, bytes.length]) {
      for (const stamping of [false, true]) {
        const small = size < 1000;
        const stream = small ? framesOf(entries.slice(0, 200), now - 1000) : bytes;
        const want = viaDecode(stream, size, node, now, stamping ? ids('A') : undefined);
        const got = viaPass(stream, size, node, now, stamping ? ids('A') : undefined);
        t.is(got.length, want.length);
        for (let i = 0; i < want.length; i++) {
          if (!want[i]!.equals(frameBytes(got[i]!))) {
            t.fail(`entry ${i}, reads of ${size}, node ${node}, ids stamped ${stamping}: ${frameBytes(got[i]!).toString('hex')} against ${want[i]!.toString('hex')}`);
            return;
          }
          compared++;
        }
      }
    }
  }
  t.log(`${compared} frames compared`);
  t.pass();
});

test('carried frames keep their bytes while another writer fills the slab between them (an encode of the same pipeline)', (t) => {
  const now = Date.UTC(2026, 10, 28, 5, 0, 0, 123);
  const entries = Array.from({ length: 2000 }, randomEntry);
  const bytes = framesOf(entries, now);
  const want = viaDecode(bytes, 16384, 'edge', now, undefined);
  let k = 0;
  const other = () => {
    if (k++ % 3 !== 0) return;
    const item = framedItem({ time: now, source: 'other', message: 'x'.repeat(k % 700) }, '', undefined);
    encodeFrames([item], 0, 1, now, 'other');
  };
  const got = viaPass(bytes, 16384, 'edge', now, undefined, other);
  t.deepEqual(
    got.map((g) => frameBytes(g!).toString('hex')),
    want.map((w) => w!.toString('hex')),
  );
  // and the frames a batch holds stay whole after the slabs are written on (what a sink resends)
  for (let i = 0; i < 300; i++) other();
  t.deepEqual(
    got.map((g) => frameBytes(g!).toString('hex')),
    want.map((w) => w!.toString('hex')),
  );
});

test('any frame (bytes changed at random): refused where the decode refuses it (a parse error), else the next node decodes the entry the decode path hands on', (t) => {
  const now = Date.UTC(2026, 10, 28, 5, 0, 0, 123);
  let refused = 0;
  let carried = 0;
  for (let round = 0; round < 4000; round++) {
    const frame = Buffer.from(framesOf([randomEntry()], now));
    // 1–3 bytes after the length changed: a flag, the level, the time, a string's length or bytes
    const flips = 1 + Math.floor(rand() * 3);
    for (let k = 0; k < flips; k++) {
      const at = LENGTH_BYTES + Math.floor(rand() * (frame.length - LENGTH_BYTES));
      frame[at] = rand() < 0.5 ? Math.floor(rand() * 256) : frame[at]! ^ (1 << Math.floor(rand() * 7));
    }
    const [want] = viaDecode(frame, frame.length, 'edge', now, ids('B'));
    const [got] = viaPass(frame, frame.length, 'edge', now, ids('B'));
    if (want === undefined) {
      t.is(got, undefined, `round ${round}: the decode refuses ${frame.toString('hex')}`);
      refused++;
      continue;
    }
    if (got === undefined) {
      t.fail(`round ${round}: carrying refused ${frame.toString('hex')}, which the decode takes`);
      return;
    }
    t.deepEqual(decodeAtNext(frameBytes(got)), decodeAtNext(want), `round ${round}: ${frame.toString('hex')}`);
    carried++;
  }
  t.log(`${carried} carried, ${refused} refused`);
  t.true(refused > 100 && carried > 100);
});

test('a carried item weighs its message bytes (the raw format line of an ASCII entry), has no entry until a sink needs one, and keeps the id it was given or stamped', (t) => {
  const now = Date.UTC(2026, 10, 28, 5, 0, 0, 123);
  const entries: Entry[] = [
    { time: now, source: 'app.log', message: 'plain ascii line', id: 'AbC.1' },
    { time: now, source: 'app.log', message: 'no id here' },
  ];
  const got: PassedItem[] = [];
  read(framesOf(entries, now), 1 << 20, (f) => got.push(passFrame(f, 'edge', now, 'relay', ids('R'), frameIdOf(f))!));
  t.is(got[0]!.lineBytes, 'plain ascii line'.length);
  t.is(got[0]!.id, 'AbC.1');
  t.is(got[1]!.id, 'R.0');
  t.is(got[0]!.entry as Entry | undefined, undefined);
  t.deepEqual(decodeAtNext(frameBytes(got[1]!)), { time: now, source: 'app.log', message: 'no id here', node: 'edge', id: 'R.0' });
});

/** `n` as version 2 writes lengths: 5 bytes of 7 bits, most significant first. */
function length7(n: number): Buffer {
  return Buffer.from([Math.floor(n / 2 ** 28) & 0x7f, (n >>> 21) & 0x7f, (n >>> 14) & 0x7f, (n >>> 7) & 0x7f, n & 0x7f]);
}

const withLength = (body: Buffer): Buffer => Buffer.concat([length7(body.length), body]);

/** An entry frame from its parts: flags, level, time's magnitude, strings with their lengths, the message last. */
function entryFrame(flags: number, level: number, time: number, strings: readonly string[], message: string): Buffer {
  const hi = Math.floor(time / 2 ** 28);
  const lo = time - hi * 2 ** 28;
  const parts = strings.map((s) => Buffer.concat([length7(Buffer.byteLength(s)), Buffer.from(s)]));
  return withLength(Buffer.concat([Buffer.from([1, flags, level]), length7(hi).subarray(1), length7(lo).subarray(1), ...parts, Buffer.from(message)]));
}

test('frames no logrelay writer makes (another implementation, an older release) are carried on as the decode path frames them again: empty fields, node or source, no time, a negative zero, whitespace in fields', (t) => {
  const now = Date.UTC(2026, 10, 28, 5, 0, 0, 123);
  const ID = 1;
  const NODE = 2;
  const FIELDS = 4;
  const ASCII = 8;
  const NEG = 16;
  const frames = [
    entryFrame(ID | FIELDS | ASCII, 3, 5, ['id-1', 'src', '{}'], 'empty fields'),
    entryFrame(ID | FIELDS | ASCII, 3, 5, ['id-2', 'src', ' { "a" : 1.50 , "b":[ ] } '], 'fields with whitespace'),
    entryFrame(ID | NODE | ASCII, 0, 5, ['id-3', 'src', ''], 'empty node'),
    entryFrame(ID | NODE | FIELDS | ASCII, 0, 5, ['id-4', 'src', '', '{ }'], 'empty node, empty fields'),
    entryFrame(ID | NODE | FIELDS, 0, 5, ['id-5', 'src', 'upstream-ü', '{"k":"v"}'], 'own node, fields'),
    entryFrame(ID | NODE | FIELDS | ASCII, 0, 5, ['id-6', 'src', 'upstream', '{}'], 'own node, empty fields'),
    entryFrame(ID | ASCII, 2, 5, ['id-7', ''], 'empty source'),
    entryFrame(ASCII, 2, 5, ['src'], 'no id'),
    entryFrame(NODE | ASCII, 0, 5, ['', ''], 'no id, empty source, empty node'),
    entryFrame(ID | ASCII | NEG, 1, 0, ['id-8', 'src'], 'negative zero'),
    entryFrame(ID | ASCII | NEG, 1, 1234, ['id-9', 'src'], 'before 1970'),
    withLength(Buffer.concat([Buffer.from([1, ID | ASCII, 6]), Buffer.alloc(8, 0x7f), length7(4), Buffer.from('id-a'), length7(3), Buffer.from('src'), Buffer.from('time too large')])),
    entryFrame(ID, 4, 5, ['id-b', 'src'], 'not flagged ASCII though it is'),
  ];
  for (const frame of frames) {
    for (const node of ['edge', undefined]) {
      const [want] = viaDecode(frame, frame.length, node, now, ids('C'));
      const [got] = viaPass(frame, frame.length, node, now, ids('C'));
      t.truthy(want, frame.toString('latin1'));
      const label = `${frame.subarray(16).toString('latin1')}, link node ${node}`;
      // the decode path sets the ASCII flag anew and writes fields anew (without whitespace, 1.50 as
      // 1.5); carried, a frame keeps the flag and the fields' text it came with: the same entry next
      if (frame.includes('not flagged ASCII') || frame.includes('whitespace')) t.deepEqual(decodeAtNext(frameBytes(got!)), decodeAtNext(want!), label);
      else t.is(frameBytes(got!).toString('hex'), want!.toString('hex'), label);
    }
  }
});
