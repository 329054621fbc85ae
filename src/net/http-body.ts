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

/** The `Content-Encoding` values inflateLimited takes on this runtime (`zstd` only where zlib has it). */
export const INFLATABLE: ReadonlySet<string> = new Set(zstdAsync ? ['gzip', 'deflate', 'zstd'] : ['gzip', 'deflate']);

/**
 * Inflates a `gzip`, `deflate` (zlib, or raw as some clients send) or `zstd` body, refusing
 * output past `max` bytes: zlib stops there (maxOutputLength) instead of inflating the rest.
 */
export async function inflateLimited(body: Buffer, encoding: string, max: number): Promise<Buffer> {
  const opts: ZlibOptions = { maxOutputLength: Math.max(1, max) };
  try {
    if (encoding === 'gzip') return await gunzipAsync(body, opts);
    if (encoding === 'zstd' && zstdAsync) return await zstdAsync(body, opts);
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
