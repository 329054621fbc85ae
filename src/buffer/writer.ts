// The event loop's side of the disk buffers' writer thread (writer-thread.ts): one thread for
// every buffer of the process, started at the first write, keeping the process alive only while
// a write is under way.
// CRC-32 of every record, the write and the fdatasync cost the event loop nothing but a message.
// A thread that dies fails what it had (the buffer retries) and is started again on the next write.

import { Worker } from 'node:worker_threads';
import type { WriteAnswer, WriterMessage } from './writer-thread.js';

let thread: Worker | undefined;
/** how many threads were started: records written ahead by one are unknown to the next */
let generation = 0;
let nextId = 1;
/**
 * The shared memory the thread was given, by its number there. A request names its chunks by
 * number, offset and length: passing the memory itself in every message cost about 0.15 ms a
 * request (a tenth of the event loop's time at a few hundred commits a second). The thread lets
 * go of one once the event loop's side was collected.
 */
let shared = new WeakMap<SharedArrayBuffer, number>();
let nextShared = 1;
const collected = new FinalizationRegistry<{ readonly thread: Worker; readonly n: number }>(({ thread: w, n }) => {
  if (w === thread) w.postMessage({ forget: n } satisfies WriterMessage);
});
const waiting = new Map<number, { resolve: () => void; reject: (err: Error) => void }>();

function start(): Worker {
  generation++;
  const w = new Worker(new URL('./writer-thread.js', import.meta.url));
  w.on('message', (a: WriteAnswer) => {
    const p = waiting.get(a.id);
    if (!p) return;
    waiting.delete(a.id);
    if (waiting.size === 0) w.unref();
    if (a.error === undefined) p.resolve();
    else p.reject(Object.assign(new Error(a.error), { code: a.code }));
  });
  shared = new WeakMap();
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

/** The three numbers of each chunk (see WriterMessage), its shared memory given to `w` first if new to it. */
function partsOf(w: Worker, chunks: readonly Uint8Array[]): number[] {
  const parts = new Array<number>(3 * chunks.length);
  for (let i = 0; i < chunks.length; i++) {
    const c = chunks[i]!;
    const mem = c.buffer as SharedArrayBuffer;
    let n = shared.get(mem);
    if (n === undefined) {
      n = nextShared++;
      shared.set(mem, n);
      collected.register(mem, { thread: w, n });
      w.postMessage({ share: mem, n } satisfies WriterMessage);
    }
    parts[3 * i] = n;
    parts[3 * i + 1] = c.byteOffset;
    parts[3 * i + 2] = c.length;
  }
  return parts;
}

function request(message: (id: number) => WriterMessage): Promise<void> {
  const w = (thread ??= start());
  const id = nextId++;
  // a write under way keeps the process alive, an idle thread never does
  if (waiting.size === 0) w.ref();
  return new Promise<void>((resolve, reject) => {
    waiting.set(id, { resolve, reject });
    w.postMessage(message(id));
  });
}

/**
 * Seals `chunks` (records in shared memory, from RecordEncoder), writes them at `at` in `fd` ahead
 * of their commit, unanswered; returns the writer's generation, which the commit names. `fd` stays
 * open until a commit or a barrier after it is over.
 */
export function writeAhead(fd: number, chunks: readonly Uint8Array[], at: number): number {
  const w = (thread ??= start());
  w.postMessage({ ahead: true, fd, at, parts: partsOf(w, chunks) } satisfies WriterMessage);
  return generation;
}

/**
 * Seals `chunks`, writes them at `at` in `fd` and syncs it, with what was written ahead on it
 * since the last commit; resolves once durable. `aheadBy`: the generation records were written
 * ahead by (a thread started since never wrote them: the commit fails, and the retry writes all).
 * `reset`: a retry after a failure (what was written since was cut off). `fd` stays open until then.
 */
export function writeAndSync(fd: number, chunks: readonly Uint8Array[], at: number, reset = false, aheadBy?: number): Promise<void> {
  thread ??= start();
  if (aheadBy !== undefined && aheadBy !== generation) return Promise.reject(Object.assign(new Error('disk buffer writer thread restarted before a commit'), { code: 'EIO' }));
  const w = thread;
  const parts = partsOf(w, chunks);
  return request((id) => ({ id, fd, at, parts, reset }));
}

/**
 * Resolves once the writer handled everything sent before: `fd` may then be cut or closed (nothing
 * written ahead on it lands later), and a failure written ahead on it is forgotten.
 */
export function writerBarrier(fd?: number): Promise<void> {
  if (!thread) return Promise.resolve();
  return request((id) => ({ id, barrier: true, fd }));
}
