// The event loop's side of the disk buffers' writer thread (writer-thread.ts): one thread for
// every buffer of the process, started when the first opens, keeping the process alive only while
// a write is under way.
// CRC-32 of every record, the write and the fdatasync cost the event loop nothing but a message.
// A thread that dies fails what it had (the buffer retries) and is started again on the next write.

import { MessageChannel, type MessagePort, receiveMessageOnPort, Worker } from 'node:worker_threads';
import type { WriteAnswer, WriterMessage } from './writer-thread.js';

let thread: Worker | undefined;
/** where the thread's answers come (a port of its own: pollWriter reads it between turns) */
let answers: MessagePort | undefined;
let nextId = 1;
/**
 * The shared memory the thread was given, by its number there. A request names its chunks by
 * number, offset and length: passing the memory itself in every message cost about 0.15 ms a
 * request (a tenth of the event loop's time at a few hundred requests a second). The thread lets
 * go of one once the event loop's side was collected.
 */
let shared = new WeakMap<SharedArrayBuffer, number>();
let nextShared = 1;
const collected = new FinalizationRegistry<{ readonly thread: Worker; readonly n: number }>(({ thread: w, n }) => {
  if (w === thread) w.postMessage({ forget: n } satisfies WriterMessage);
});
/** Called once a write is durable (`synced`: it ended its fdatasync) or failed. */
export type WriteDone = (err: Error | undefined, synced: boolean) => void;
const waiting = new Map<number, WriteDone>();

function answered(a: WriteAnswer): void {
  // a descriptor's durable writes come before its failures (see writer-thread.ts)
  let s = 0;
  for (const id of a.done) {
    const cb = waiting.get(id);
    waiting.delete(id);
    const synced = a.syncs[s] === id;
    if (synced) s++;
    cb?.(undefined, synced);
  }
  for (const f of a.failed) {
    const cb = waiting.get(f.id);
    waiting.delete(f.id);
    cb?.(Object.assign(new Error(f.error), { code: f.code }), false);
  }
  if (waiting.size === 0) unref();
}

function unref(): void {
  thread?.unref();
  answers?.unref();
}

/**
 * Takes the answers the writer thread has sent, now, without waiting for the event loop's turn:
 * a source reading a burst calls it between reads, so what became durable is known (and
 * acknowledged) while the burst goes on.
 */
export function pollWriter(): void {
  const port = answers;
  if (!port || waiting.size === 0) return;
  for (let m = receiveMessageOnPort(port); m; m = receiveMessageOnPort(port)) answered(m.message as WriteAnswer);
}

function start(): Worker {
  const { port1, port2 } = new MessageChannel();
  const w = new Worker(new URL('./writer-thread.js', import.meta.url), { workerData: { answers: port2 }, transferList: [port2] });
  port1.on('message', answered);
  answers = port1;
  shared = new WeakMap();
  // 'error' and then 'exit': the first fails what the thread had (a thread started since is not this one's)
  const gone = (err: Error) => {
    if (thread !== w) return;
    thread = undefined;
    port1.close();
    answers = undefined;
    const cbs = [...waiting.values()];
    waiting.clear();
    for (const cb of cbs) cb(err, false);
  };
  w.on('error', gone);
  w.on('exit', (code) => gone(new Error(`disk buffer writer thread exited (${code})`)));
  w.unref();
  port1.unref();
  return w;
}

/**
 * Starts the thread now (a buffer that opens will write): its start takes tens of milliseconds,
 * which the first records would otherwise wait for.
 */
export function startWriter(): void {
  thread ??= start();
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

function request(message: (id: number) => WriterMessage, done: WriteDone): void {
  const w = (thread ??= start());
  const id = nextId++;
  // a write under way keeps the process alive, an idle thread never does
  if (waiting.size === 0) {
    w.ref();
    answers?.ref();
  }
  waiting.set(id, done);
  w.postMessage(message(id));
}

/**
 * Seals `chunks` (records in shared memory, from RecordEncoder) and writes them at `at` in `fd`;
 * `done` runs once the fdatasync that covers them is over (or they failed). Writes are done in
 * the order asked, grouped under one sync (see writer-thread.ts). After a failure on `fd`, every
 * later write on it fails too until a barrier naming it. `fd` stays open until `done` ran.
 */
export function writeDurable(fd: number, chunks: readonly Uint8Array[], at: number, done: WriteDone): void {
  const w = (thread ??= start());
  const parts = partsOf(w, chunks);
  request((id) => ({ id, fd, at, parts }), done);
}

/**
 * Resolves once the writer handled everything sent before: `fd` may then be cut or closed (nothing
 * sent before lands later), and a failure on it is forgotten.
 */
export function writerBarrier(fd?: number): Promise<void> {
  if (!thread) return Promise.resolve();
  return new Promise<void>((resolve, reject) => request((id) => ({ id, barrier: true, fd }), (err) => (err ? reject(err) : resolve())));
}
