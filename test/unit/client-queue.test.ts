// The per-client queue's bookkeeping: what a cut client still had queued is reported as dropped.

import { EventEmitter } from 'node:events';
import test from 'ava';
import { ClientQueue } from '../../src/net/client-queue.js';

/** A writer that takes one write and then reports a full buffer until drain() is called. */
class StalledWriter extends EventEmitter {
  readonly chunks: string[] = [];
  write(chunk: string): boolean {
    this.chunks.push(chunk);
    return false;
  }
}

test('close() reports the frames it forgets, once', (t) => {
  const out = new StalledWriter();
  const q = new ClientQueue(out, { capacity: 4, writeTimeoutMs: 0, onTimeout: () => {} });
  t.is(q.push(['a\n', 'b\n']), 0);
  t.deepEqual(out.chunks, ['a\nb\n'], 'handed over in one write; the writer is now blocked');
  t.is(q.push(['c\n', 'd\n', 'e\n', 'f\n', 'g\n']), 1, 'one frame beyond the capacity of 4');
  t.is(q.length, 4);
  t.is(q.close(), 4, 'the queued frames are forgotten and reported');
  t.is(q.close(), 0, 'a second close forgets nothing more');
  out.emit('drain');
  t.deepEqual(out.chunks, ['a\nb\n'], 'nothing written after close');
});
