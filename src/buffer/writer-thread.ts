// The disk buffers' writer thread (DESIGN.md §23): seals records (their CRCs), writes them where
// they go in a segment and syncs it, off the event loop. One request at a time, in order; each
// answer says done or the error. The records are in shared memory: nothing is copied.

import { fdatasyncSync, writevSync } from 'node:fs';
import { parentPort } from 'node:worker_threads';
import { sealRecords } from './record.js';

/**
 * A request: write the chunks `parts` names (shared memory's number, offset, length: three
 * numbers a chunk) at `at` in `fd`, then fdatasync it. Or shared memory given a number once, or
 * that number let go.
 */
export type WriterMessage =
  | { readonly id: number; readonly fd: number; readonly at: number; readonly parts: readonly number[] }
  | { readonly share: SharedArrayBuffer; readonly n: number }
  | { readonly forget: number };

export type WriteAnswer = { readonly id: number; readonly error?: undefined } | { readonly id: number; readonly error: string; readonly code: string | undefined };

const shared = new Map<number, SharedArrayBuffer>();

parentPort?.on('message', (req: WriterMessage) => {
  if ('share' in req) {
    shared.set(req.n, req.share);
    return;
  }
  if ('forget' in req) {
    shared.delete(req.forget);
    return;
  }
  try {
    const chunks: Uint8Array[] = [];
    for (let i = 0; i < req.parts.length; i += 3) {
      const mem = shared.get(req.parts[i]!);
      if (!mem) throw Object.assign(new Error('disk buffer writer thread: unknown shared memory'), { code: 'EINVAL' });
      chunks.push(new Uint8Array(mem, req.parts[i + 1], req.parts[i + 2]));
    }
    for (const c of chunks) sealRecords(c);
    writeAll(req.fd, chunks, req.at);
    fdatasyncSync(req.fd);
    parentPort!.postMessage({ id: req.id } satisfies WriteAnswer);
  } catch (err) {
    const e = err as NodeJS.ErrnoException;
    parentPort!.postMessage({ id: req.id, error: e.message ?? String(err), code: e.code } satisfies WriteAnswer);
  }
});

/** writev until every byte is written: a short write (a disk filling up) goes on and meets the error. */
function writeAll(fd: number, chunks: readonly Uint8Array[], at: number): void {
  const rest = chunks.filter((c) => c.length > 0);
  let pos = at;
  while (rest.length > 0) {
    let n = writevSync(fd, rest, pos);
    // a file takes at least a byte or fails; never spin on nothing written
    if (n === 0) throw Object.assign(new Error('write wrote nothing'), { code: 'EIO' });
    pos += n;
    while (rest.length > 0 && n >= rest[0]!.length) n -= rest.shift()!.length;
    if (n > 0) rest[0] = rest[0]!.subarray(n);
  }
}
