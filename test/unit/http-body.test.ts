// Compressed request bodies of several gzip members or zstd frames (RFC 1952 §2.2, RFC 8878 §3.1)
// are inflated whole: Node.js 22's zstd inflate stops at the end of its input's first frame, so
// inflateLimited splits a zstd body into its frames (zstdFrameEnds) and inflates them one by one.

import test from 'ava';
import { gzipSync } from 'node:zlib';
import * as zlib from 'node:zlib';
import { hasZstd } from '../../src/chain/compression.js';
import { type BodyFault, INFLATABLE, inflateLimited, zstdFrameEnds } from '../../src/net/http-body.js';

/** The text every compressed fixture below holds: 100 NDJSON entries, 3,490 bytes. */
const BODY = Array.from({ length: 100 }, (_, i) => `{"message":"entry ${i} of the body"}\n`).join('');

// Made by Debian's zstd 1.5.4 from BODY: `zstd -1` (with its content checksum), `zstd -1
// --no-check`, and `pzstd -p 2` (a skippable frame that gives the size of the frame after it).
const CHECKED = Buffer.from(
  'KLUv/WSiDNUEAELIGBqARWkDMbVaH7r5EX4YZkiY7O6dMuZFVh5TGJmZmZmZiIiIiIh3d3d3d2ZmZmZmVVVVVVX///+/bdu23bZt2xIRERFR4lndJcGASQ6GoRwFUhBGGZQkAAE4hmBOonAcZ2EEAmSoIfz6/wbQG9UBEvhHEEAQ+I/hHyIAEAAYFrD9itd2BdduRWv/rChhbXqIxTPJosqUVAFXbRQU',
  'base64',
);
const UNCHECKED = Buffer.from(
  'KLUv/WCiDNUEAELIGBqARWkDMbVaH7r5EX4YZkiY7O6dMuZFVh5TGJmZmZmZiIiIiIh3d3d3d2ZmZmZmVVVVVVX///+/bdu23bZt2xIRERFR4lndJcGASQ6GoRwFUhBGGZQkAAE4hmBOonAcZ2EEAmSoIfz6/wbQG9UBEvhHEEAQ+I/hHyIAEAAYFrD9itd2BdduRWv/rChhbXqIxTPJosqUVAE=',
  'base64',
);
const PZSTD = Buffer.from(
  'UCpNGAQAAACnAAAAKLUv/QRY1QQAQsgYGoBFaQMxtVofuvkRfhhmSJjs7p0y5kVWHlMYmZmZmZmIiIiIiHd3d3d3ZmZmZmZVVVVVVf///79t27bdtm3bEhEREVHiWd0lwYBJDoahHAVSEEYZlCQAATiGYE6icBxnYQQCZKgh/Pr/BtAb1QES+EcQQBD4j+EfIgAQABgWsP2K13YF125Fa/+sKGFteojFM8miypRUAVdtFBQ=',
  'base64',
);
/** pzstd's skippable frame: magic, size 4, the size of the frame after it. */
const PZSTD_SKIPPABLE = 12;

/** A frame built by hand: single segment, a 1-byte content size, no checksum; one raw block of `text`. */
function rawFrame(text: string): Buffer {
  const data = Buffer.from(text);
  const header = Buffer.alloc(3);
  header.writeUIntLE((data.length << 3) | 1, 0, 3); // last block, type raw, its size
  return Buffer.concat([Buffer.from([0x28, 0xb5, 0x2f, 0xfd, 0x20, data.length]), header, data]);
}

/** A frame built by hand whose one block is RLE: `byte` `count` times (the block carries the byte once). */
function rleFrame(byte: string, count: number): Buffer {
  const header = Buffer.alloc(3);
  header.writeUIntLE((count << 3) | (1 << 1) | 1, 0, 3); // last block, type RLE, the size it makes
  return Buffer.concat([Buffer.from([0x28, 0xb5, 0x2f, 0xfd, 0x20, count]), header, Buffer.from(byte)]);
}

const ends = (...parts: Buffer[]): number[] => parts.reduce<number[]>((acc, p) => [...acc, (acc.at(-1) ?? 0) + p.length], []);

test('zstdFrameEnds: the end of each frame of real compressor output, one after another, skippable frames included', (t) => {
  t.deepEqual(zstdFrameEnds(CHECKED), [CHECKED.length]);
  t.deepEqual(zstdFrameEnds(UNCHECKED), [UNCHECKED.length]);
  t.deepEqual(zstdFrameEnds(PZSTD), [PZSTD_SKIPPABLE, PZSTD.length]);
  const raw = rawFrame('{"message":"by hand"}\n');
  const rle = rleFrame('\n', 200);
  t.deepEqual(zstdFrameEnds(Buffer.concat([CHECKED, raw, UNCHECKED, rle, PZSTD])), ends(CHECKED, raw, UNCHECKED, rle, PZSTD.subarray(0, PZSTD_SKIPPABLE), PZSTD.subarray(PZSTD_SKIPPABLE)));
  t.deepEqual(zstdFrameEnds(Buffer.alloc(0)), []);
});

test('zstdFrameEnds: a body that is not whole frames to its end has none (zlib then says what is wrong)', (t) => {
  const two = Buffer.concat([CHECKED, UNCHECKED]);
  t.is(zstdFrameEnds(two.subarray(0, two.length - 1)), undefined, 'the last frame cut short');
  t.is(zstdFrameEnds(CHECKED.subarray(0, CHECKED.length - 2)), undefined, 'the checksum cut short');
  t.is(zstdFrameEnds(Buffer.concat([CHECKED, Buffer.from('trailing text')])), undefined, 'text after the frames');
  t.is(zstdFrameEnds(Buffer.from('{"message":"not compressed"}\n')), undefined);
  const reservedBit = Buffer.from(UNCHECKED);
  reservedBit[4]! |= 8;
  t.is(zstdFrameEnds(reservedBit), undefined, 'the header descriptor reserved bit set');
  const reservedBlock = rawFrame('x');
  reservedBlock[6]! |= 6; // block type 3
  t.is(zstdFrameEnds(reservedBlock), undefined, 'a block of the reserved type');
});

test('inflateLimited: a gzip body of two members is inflated whole', async (t) => {
  const half = BODY.length / 2;
  const body = Buffer.concat([gzipSync(BODY.slice(0, half)), gzipSync(BODY.slice(half))]);
  t.is((await inflateLimited(body, 'gzip', 1 << 20)).toString(), BODY);
});

if (hasZstd()) {
  test(`inflateLimited (${process.version}): a zstd body of several frames is inflated whole, each frame's bytes within max_body_bytes`, async (t) => {
    const c = (zlib as unknown as { zstdCompressSync(b: Buffer): Buffer }).zstdCompressSync;
    const tail = '{"message":"the last frame, from zlib"}\n';
    const body = Buffer.concat([CHECKED, rawFrame('{"message":"by hand"}\n'), PZSTD, UNCHECKED, rleFrame(' ', 30), c(Buffer.from(tail))]);
    const expected = `${BODY}{"message":"by hand"}\n${BODY}${BODY}${' '.repeat(30)}${tail}`;
    t.is((await inflateLimited(body, 'zstd', 1 << 20)).toString(), expected);
    t.is((await inflateLimited(body, 'zstd', expected.length)).length, expected.length, 'exactly at the cap');
    const over = await t.throwsAsync<BodyFault>(inflateLimited(body, 'zstd', expected.length - 1));
    t.true(over.tooLarge, 'one byte over the cap, in the last frame: 413');
    const early = await t.throwsAsync<BodyFault>(inflateLimited(body, 'zstd', BODY.length + 10));
    t.true(early.tooLarge, 'over the cap in the second frame');
  });
} else {
  test(`inflateLimited on a runtime without zstd (${process.version}): zstd is not an encoding the sources take (415)`, (t) => {
    t.false(INFLATABLE.has('zstd'));
    t.true(INFLATABLE.has('gzip'));
  });
}
