// The disk buffers' writer thread (DESIGN.md §23): seals records (their CRCs), writes them where
// they go in a segment and syncs it, off the event loop. The thread runs group commit itself:
// it writes every request waiting in its queue, then one fdatasync per descriptor covers them
// all, and one answer says which are durable (or failed, with the error). What arrives while a
// sync runs is the next group. So the sync cycle never waits for the event loop's turn: the event
// loop only posts records and hears which are durable. The records are in shared memory: nothing
// is copied.

import { fdatasyncSync, writevSync } from 'node:fs';
import { type MessagePort, parentPort, receiveMessageOnPort, workerData } from 'node:worker_threads';
import { sealRecords } from './record.js';

/**
 * A request: write the chunks `parts` names (shared memory's number, offset, length: three
 * numbers a chunk) at `at` in `fd`, answered once synced. Or a barrier; or shared memory given a
 * number once, or that number let go.
 */
export type WriterMessage =
  | { readonly id: number; readonly fd: number; readonly at: number; readonly parts: readonly number[] }
  /** answered once every message before it was handled; forgets a failure on `fd` (its writes were cut off since) */
  | { readonly id: number; readonly barrier: true; readonly fd?: number }
  | { readonly share: SharedArrayBuffer; readonly n: number }
  | { readonly forget: number };

/**
 * What a group commit did: `done` are durable (or barriers passed), in the order they were asked
 * for; `syncs` are those of them that ended an fdatasync; `failed` did not get to the disk.
 */
export interface WriteAnswer {
  readonly done: readonly number[];
  readonly syncs: readonly number[];
  readonly failed: readonly { readonly id: number; readonly error: string; readonly code: string | undefined }[];
}

/** where answers go: a port of their own, which the event loop may read between its turns */
const answers = (workerData as { answers?: MessagePort } | undefined)?.answers;
const shared = new Map<number, SharedArrayBuffer>();
/**
 * A write or sync failed on these descriptors: every later write on one fails with it, unwritten,
 * until a barrier naming it (the event loop cut off what followed the durable end, and writes it all again).
 */
const failedOn = new Map<number, NodeJS.ErrnoException>();
/** writes since the last sync, by descriptor: their ids, in order */
const dirty = new Map<number, number[]>();
let done: number[] = [];
let syncs: number[] = [];
let failed: { id: number; error: string; code: string | undefined }[] = [];
/** bytes written since the last sync */
let groupBytes = 0;
/** Past this many bytes written a group is synced even if more wait: a sync's size stays bounded. */
const GROUP_MAX_BYTES = 4 * 1024 * 1024;
/**
 * A group smaller than this waits up to GROUP_WAIT_MS for more before its sync: a sync per append
 * (a few hundred records) kept the thread syncing nearly all the time, and its answers came to
 * the event loop more often than they saved it any wait.
 */
const GROUP_MIN_BYTES = 128 * 1024;
const GROUP_WAIT_MS = 0.5;
/** never notified: Atomics.wait on it is a sleep */
const sleeper = new Int32Array(new SharedArrayBuffer(4));

function chunksOf(parts: readonly number[]): Uint8Array[] {
  const chunks: Uint8Array[] = [];
  for (let i = 0; i < parts.length; i += 3) {
    const mem = shared.get(parts[i]!);
    if (!mem) throw Object.assign(new Error('disk buffer writer thread: unknown shared memory'), { code: 'EINVAL' });
    chunks.push(new Uint8Array(mem, parts[i + 1], parts[i + 2]));
  }
  return chunks;
}

function fail(ids: readonly number[], err: NodeJS.ErrnoException): void {
  for (const id of ids) failed.push({ id, error: err.message ?? String(err), code: err.code });
}

/** One fdatasync for each descriptor written since the last: what it covers is durable, or failed. */
function syncAll(): void {
  for (const [fd, ids] of dirty) {
    try {
      fdatasyncSync(fd);
      for (const id of ids) done.push(id);
      syncs.push(ids.at(-1)!);
    } catch (err) {
      failedOn.set(fd, err as NodeJS.ErrnoException);
      fail(ids, err as NodeJS.ErrnoException);
    }
  }
  dirty.clear();
  groupBytes = 0;
}

function handle(req: WriterMessage): void {
  if ('share' in req) {
    shared.set(req.n, req.share);
    return;
  }
  if ('forget' in req) {
    shared.delete(req.forget);
    return;
  }
  if ('barrier' in req) {
    // what came before is written and synced (or failed) first
    syncAll();
    if (req.fd !== undefined) failedOn.delete(req.fd);
    done.push(req.id);
    return;
  }
  const early = failedOn.get(req.fd);
  if (early) {
    fail([req.id], early);
    return;
  }
  try {
    const chunks = chunksOf(req.parts);
    for (const c of chunks) sealRecords(c);
    groupBytes += writeAll(req.fd, chunks, req.at);
  } catch (err) {
    // the writes before it on this descriptor are not synced: they fail with it, and the retry writes them again
    const e = err as NodeJS.ErrnoException;
    failedOn.set(req.fd, e);
    fail(dirty.get(req.fd) ?? [], e);
    dirty.delete(req.fd);
    fail([req.id], e);
    return;
  }
  let ids = dirty.get(req.fd);
  if (!ids) dirty.set(req.fd, (ids = []));
  ids.push(req.id);
}

parentPort?.on('message', (first: WriterMessage) => {
  handle(first);
  const started = performance.now();
  for (;;) {
    // everything already waiting joins this group
    while (groupBytes < GROUP_MAX_BYTES) {
      const next = receiveMessageOnPort(parentPort!);
      if (!next) break;
      handle(next.message as WriterMessage);
    }
    if (groupBytes === 0 || groupBytes >= GROUP_MIN_BYTES || performance.now() - started >= GROUP_WAIT_MS) break;
    // a short sleep, then whatever came meanwhile joins the group
    Atomics.wait(sleeper, 0, 0, 0.1);
  }
  syncAll();
  if (done.length === 0 && failed.length === 0) return;
  answers!.postMessage({ done, syncs, failed } satisfies WriteAnswer);
  done = [];
  syncs = [];
  failed = [];
});

/**
 * writev until every byte is written: a short write (a disk filling up) goes on and meets the
 * error. Returns the bytes written.
 */
function writeAll(fd: number, chunks: readonly Uint8Array[], at: number): number {
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
  return pos - at;
}
