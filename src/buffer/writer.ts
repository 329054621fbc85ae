// The event loop's side of the disk buffers' writer thread (writer-thread.ts): one thread for
// every buffer of the process, started at the first write, keeping the process alive only while
// a write is under way.
// CRC-32 of every record, the write and the fdatasync cost the event loop nothing but a message.
// A thread that dies fails what it had (the buffer retries) and is started again on the next write.

import { Worker } from 'node:worker_threads';
import type { WriteAnswer, WriteRequest } from './writer-thread.js';

let thread: Worker | undefined;
let nextId = 1;
const waiting = new Map<number, { resolve: () => void; reject: (err: Error) => void }>();

function start(): Worker {
  const w = new Worker(new URL('./writer-thread.js', import.meta.url));
  w.on('message', (a: WriteAnswer) => {
    const p = waiting.get(a.id);
    if (!p) return;
    waiting.delete(a.id);
    if (waiting.size === 0) w.unref();
    if (a.error === undefined) p.resolve();
    else p.reject(Object.assign(new Error(a.error), { code: a.code }));
  });
  const gone = (err: Error) => {
    if (thread === w) thread = undefined;
    for (const p of waiting.values()) p.reject(err);
    waiting.clear();
  };
  w.on('error', gone);
  w.on('exit', (code) => gone(new Error(`disk buffer writer thread exited (${code})`)));
  w.unref();
  return w;
}

/**
 * Seals `chunks` (records from encodeRecordsShared), writes them at `at` in `fd` and syncs it;
 * resolves once durable. `fd` stays open until then.
 */
export function writeAndSync(fd: number, chunks: readonly Buffer[], at: number): Promise<void> {
  thread ??= start();
  const id = nextId++;
  // a write under way keeps the process alive, an idle thread never does
  if (waiting.size === 0) thread.ref();
  return new Promise<void>((resolve, reject) => {
    waiting.set(id, { resolve, reject });
    thread!.postMessage({ id, fd, at, chunks } satisfies WriteRequest);
  });
}
