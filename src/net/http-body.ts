// Request bodies of listening HTTP plugins, bounded: a body over its cap is refused as it
// arrives (never held whole), bodies under way share a bound together, and a compressed body is
// inflated with a cap on its output, so a small bomb stops as soon as it passes the cap.

import type { IncomingMessage } from 'node:http';
import { promisify } from 'node:util';
import * as zlib from 'node:zlib';
import { gunzip, inflate, inflateRaw, type ZlibOptions } from 'node:zlib';

/** Body bytes every request under way holds, and the most they may hold together. */
export interface BodyBudget {
  held: number;
  readonly bound: number;
}

/**
 * The body, or why there is none: over `max` (413), over the shared budget (503), or the client
 * went away. A refusal's connection is closed once the answer `done` wrote is out, unless the
 * body was refused before a byte of it was read (it is drained and the connection kept).
 */
export type BodyOutcome = Buffer | 'too_large' | 'busy' | 'aborted';

/**
 * Reads `req`'s body up to `max` bytes, within `budget`; `done` runs once. A declared length over
 * `max` is refused before a byte is read.
 */
export function readLimitedBody(req: IncomingMessage, max: number, budget: BodyBudget, done: (outcome: BodyOutcome) => void): void {
  readLimitedChunks(req, max, budget, (outcome) => {
    if (typeof outcome === 'string') done(outcome);
    else done(outcome.length === 1 ? outcome[0]! : Buffer.concat(outcome));
  });
}

/**
 * readLimitedBody, the body as the chunks it arrived in: a reader that decodes it piece by piece
 * needs no copy of it whole (a chain batch of 100 KiB costs a copy of each byte otherwise).
 */
export function readLimitedChunks(req: IncomingMessage, max: number, budget: BodyBudget, done: (outcome: Buffer[] | Exclude<BodyOutcome, Buffer>) => void): void {
  const declared = Number(req.headers['content-length']);
  if (declared > max) {
    done('too_large');
    req.socket.destroySoon();
    return;
  }
  if (declared > 0 && budget.held + declared > budget.bound) {
    req.resume();
    done('busy');
    return;
  }
  const chunks: Buffer[] = [];
  let size = 0;
  // a declared length is reserved at once; a body without one reserves as it arrives
  let reserved = declared > 0 ? declared : 0;
  budget.held += reserved;
  let over = false;
  const release = () => {
    budget.held -= reserved;
    reserved = 0;
  };
  const finish = (outcome: Buffer[] | Exclude<BodyOutcome, Buffer>) => {
    over = true;
    release();
    // a refused body's bytes go at once, not with the request
    if (typeof outcome === 'string') chunks.length = 0;
    done(outcome);
    if (outcome === 'too_large' || outcome === 'busy') req.socket.destroySoon();
  };
  req.on('data', (chunk: Buffer) => {
    if (over) return;
    size += chunk.length;
    if (size > reserved) {
      budget.held += size - reserved;
      reserved = size;
    }
    if (size > max) finish('too_large');
    else if (budget.held > budget.bound) finish('busy');
    else chunks.push(chunk);
  });
  req.on('close', () => {
    if (!over) finish('aborted');
  });
  req.on('end', () => {
    if (!over) finish(chunks);
  });
}

/** An inflate failure; `tooLarge` when the output passed its cap. */
export interface BodyFault extends Error {
  tooLarge?: boolean;
}

const gunzipAsync = promisify<Buffer, ZlibOptions, Buffer>(gunzip);
const inflateAsync = promisify<Buffer, ZlibOptions, Buffer>(inflate);
const inflateRawAsync = promisify<Buffer, ZlibOptions, Buffer>(inflateRaw);

/** zlib's one-shot zstd inflate, where the runtime has it (Node.js 22.15 and later). */
const zstdDecompress = (zlib as unknown as { zstdDecompress?: (buf: Buffer, opts: ZlibOptions, cb: (err: Error | null, out: Buffer) => void) => void }).zstdDecompress;
const zstdAsync = zstdDecompress ? promisify<Buffer, ZlibOptions, Buffer>(zstdDecompress) : undefined;

/** zstd's frame magic number, and the mask and value of a skippable frame's (RFC 8878 §3.1). */
const ZSTD_MAGIC = 0xfd2fb528;
const SKIPPABLE_MASK = 0xfffffff0;
const SKIPPABLE_MAGIC = 0x184d2a50;
/** Bytes of a frame header's dictionary id and content size, by their flags. */
const DICT_ID_BYTES = [0, 1, 2, 4];
const CONTENT_SIZE_BYTES = [0, 2, 4, 8];

/** Whether a skippable frame starts at `at` (one of its 16 magic numbers). */
const skippableAt = (b: Buffer, at: number): boolean => ((b.readUInt32LE(at) & SKIPPABLE_MASK) >>> 0) === SKIPPABLE_MAGIC;

/** Where the zstd frame at `at` ends (RFC 8878 §3.1.1: header, blocks, checksum); undefined when it is not one whole frame. */
function zstdFrameEnd(b: Buffer, at: number): number | undefined {
  if (at + 8 > b.length) return undefined;
  if (skippableAt(b, at)) {
    const end = at + 8 + b.readUInt32LE(at + 4);
    return end <= b.length ? end : undefined;
  }
  if (b.readUInt32LE(at) !== ZSTD_MAGIC) return undefined;
  const fhd = b[at + 4]!;
  const single = (fhd >> 5) & 1;
  const sizeFlag = fhd >> 6;
  if (fhd & 8) return undefined; // the reserved bit
  let p = at + 5 + (single ? 0 : 1) + DICT_ID_BYTES[fhd & 3]! + (sizeFlag === 0 ? single : CONTENT_SIZE_BYTES[sizeFlag]!);
  // blocks: each a 3-byte header (last-block bit, type, size); a frame of n bytes has at most n/3 of them
  for (;;) {
    if (p + 3 > b.length) return undefined;
    const header = b.readUIntLE(p, 3);
    const type = (header >> 1) & 3;
    if (type === 3) return undefined; // reserved
    p += 3 + (type === 1 ? 1 : header >>> 3); // an RLE block carries one byte
    if (p > b.length) return undefined;
    if (header & 1) break;
  }
  p += (fhd >> 2) & 1 ? 4 : 0; // the content checksum
  return p <= b.length ? p : undefined;
}

/**
 * The ends of the zstd frames `body` holds one after another (a stream of several frames is one
 * zstd stream: RFC 8878 §3.1; `pzstd` writes them), or undefined when it is not whole frames
 * through to its end. Node.js 22's zstd inflate stops at the end of its input's first frame and
 * returns what that one held, so inflateLimited inflates a body of several frames one by one.
 */
export function zstdFrameEnds(body: Buffer): number[] | undefined {
  const ends: number[] = [];
  for (let at = 0; at < body.length; ) {
    const end = zstdFrameEnd(body, at);
    if (end === undefined) return undefined;
    ends.push(end);
    at = end;
  }
  return ends;
}

/** A zstd body inflated frame by frame (zstdFrameEnds) up to `max` bytes in all, skippable frames left out. */
async function zstdFrames(inflateOne: (buf: Buffer, opts: ZlibOptions) => Promise<Buffer>, body: Buffer, max: number): Promise<Buffer> {
  const ends = zstdFrameEnds(body);
  // one frame, or not whole frames: zlib's own inflate, which says what is wrong with a bad one
  if (!ends || ends.length <= 1) return inflateOne(body, { maxOutputLength: Math.max(1, max) });
  const parts: Buffer[] = [];
  let total = 0;
  let at = 0;
  for (const end of ends) {
    const from = at;
    at = end;
    if (skippableAt(body, from)) continue;
    const out = await inflateOne(body.subarray(from, end), { maxOutputLength: Math.max(1, max - total) });
    total += out.length;
    if (total > max) throw Object.assign(new Error(`inflated body over ${max} bytes`), { code: 'ERR_BUFFER_TOO_LARGE' });
    parts.push(out);
  }
  return Buffer.concat(parts, total);
}

/** The `Content-Encoding` values inflateLimited takes on this runtime (`zstd` only where zlib has it). */
export const INFLATABLE: ReadonlySet<string> = new Set(zstdAsync ? ['gzip', 'deflate', 'zstd'] : ['gzip', 'deflate']);

/**
 * Inflates a `gzip`, `deflate` (zlib, or raw as some clients send) or `zstd` body, refusing
 * output past `max` bytes: zlib stops there (maxOutputLength) instead of inflating the rest. A
 * body of several gzip members or zstd frames is inflated whole.
 */
export async function inflateLimited(body: Buffer, encoding: string, max: number): Promise<Buffer> {
  const opts: ZlibOptions = { maxOutputLength: Math.max(1, max) };
  try {
    if (encoding === 'gzip') return await gunzipAsync(body, opts);
    if (encoding === 'zstd' && zstdAsync) return await zstdFrames(zstdAsync, body, max);
    try {
      return await inflateAsync(body, opts);
    } catch (err) {
      if ((err as NodeJS.ErrnoException).code !== 'Z_DATA_ERROR') throw err;
      return await inflateRawAsync(body, opts);
    }
  } catch (err) {
    const fault = err as BodyFault & { code?: string };
    if (fault.code === 'ERR_BUFFER_TOO_LARGE') fault.tooLarge = true;
    throw fault;
  }
}
