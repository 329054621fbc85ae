// The disk buffers' writer thread (DESIGN.md §23): seals records (their CRCs), writes them where
// they go in a segment and syncs it, off the event loop. One request at a time, in order; each
// commit's answer says done or the error. The records are in shared memory: nothing is copied.
// Records may be written ahead of their commit (while the commit before them syncs): a commit
// then syncs what was written ahead too, and fails if a write ahead of it failed.

import { fdatasyncSync, writevSync } from 'node:fs';
import { parentPort } from 'node:worker_threads';
import { sealRecords } from './record.js';

/**
 * A request: write the chunks `parts` names (shared memory's number, offset, length: three
 * numbers a chunk) at `at` in `fd`, then fdatasync it. Or shared memory given a number once, or
 * that number let go.
 */
export type WriterMessage =
  /** a commit: `reset` forgets a failure of an earlier write (what it wrote was cut off since) */
  | { readonly id: number; readonly fd: number; readonly at: number; readonly parts: readonly number[]; readonly reset: boolean }
  /** records written ahead of their commit, not synced, not answered */
  | { readonly ahead: true; readonly fd: number; readonly at: number; readonly parts: readonly number[] }
  /** answered once every message before it was handled; forgets a failure written ahead on `fd` */
  | { readonly id: number; readonly barrier: true; readonly fd?: number }
  | { readonly share: SharedArrayBuffer; readonly n: number }
  | { readonly forget: number };

export type WriteAnswer = { readonly id: number; readonly error?: undefined } | { readonly id: number; readonly error: string; readonly code: string | undefined };

const shared = new Map<number, SharedArrayBuffer>();
/**
 * A write ahead failed on these descriptors since their last commit: the next commit fails with it
 * (its retry writes everything again). A barrier naming the descriptor forgets it (before it closes).
 */
const failed = new Map<number, NodeJS.ErrnoException>();

function chunksOf(parts: readonly number[]): Uint8Array[] {
  const chunks: Uint8Array[] = [];
  for (let i = 0; i < parts.length; i += 3) {
    const mem = shared.get(parts[i]!);
    if (!mem) throw Object.assign(new Error('disk buffer writer thread: unknown shared memory'), { code: 'EINVAL' });
    chunks.push(new Uint8Array(mem, parts[i + 1], parts[i + 2]));
  }
  return chunks;
}

parentPort?.on('message', (req: WriterMessage) => {
  if ('share' in req) {
    shared.set(req.n, req.share);
    return;
  }
  if ('forget' in req) {
    shared.delete(req.forget);
    return;
  }
  if ('barrier' in req) {
    if (req.fd !== undefined) failed.delete(req.fd);
    parentPort!.postMessage({ id: req.id } satisfies WriteAnswer);
    return;
  }
  if ('ahead' in req) {
    // after a failure nothing more is written ahead: the commit fails, and the retry writes it all
    if (failed.has(req.fd)) return;
    try {
      const chunks = chunksOf(req.parts);
      for (const c of chunks) sealRecords(c);
      writeAll(req.fd, chunks, req.at);
    } catch (err) {
      failed.set(req.fd, err as NodeJS.ErrnoException);
    }
    return;
  }
  if (req.reset) failed.delete(req.fd);
  try {
    const early = failed.get(req.fd);
    if (early) {
      failed.delete(req.fd);
      throw early;
    }
    const chunks = chunksOf(req.parts);
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
