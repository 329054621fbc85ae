// Acknowledgement bookkeeping (DESIGN.md §15): tickets, in-order positions, and the ids of done entries.

import test from 'ava';
import { InOrder, settle, type Ticket } from '../../src/core/ack.js';
import { type BatchIds, DoneIds, openTicket, packBatchIds } from '../../src/worker/acks.js';
import { type DedupWindow, eachId } from '../../src/core/dedup-window.js';

const idsOf = (w: DedupWindow) => {
  const out: string[] = [];
  eachId(w, (id) => out.push(id));
  return out;
};

test('a ticket runs done once, when its last owed delivery settles', (t) => {
  let done = 0;
  const ticket: Ticket = { pending: 3, done: () => done++ };
  settle(ticket);
  settle(ticket);
  t.is(done, 0);
  settle(ticket);
  t.is(done, 1);
});

test('InOrder advances only past a finished prefix, to the last mark of it', (t) => {
  const seen: number[] = [];
  const order = new InOrder<number>((v) => seen.push(v));
  const a = order.add(10);
  const b = order.add(20);
  const c = order.add(30);
  c();
  b();
  t.deepEqual(seen, [], 'the first batch is not done: nothing moves');
  a();
  t.deepEqual(seen, [30], 'all three are done: straight to the end of the third');
  t.is(order.outstanding, 0);
  a();
  t.deepEqual(seen, [30], 'completing twice changes nothing');
  const d = order.add(40);
  d();
  t.deepEqual(seen, [30, 40], 'a mark completed at once advances at once');
});

test('openTicket: nobody waiting means no ticket; a journal gets the ids once the batch is done', (t) => {
  t.is(openTicket(undefined, undefined, { ids: [] }), undefined);
  const journal = new DoneIds(100);
  const ids = ['a', 'b'];
  let sourceDone = false;
  const ticket = openTicket(() => (sourceDone = true), journal, { ids })!;
  ticket.pending += 2; // two sinks took one entry
  settle(ticket); // the hold released after the fan-out
  settle(ticket);
  t.is(journal.take(), undefined, 'not done yet: no id is handed on');
  settle(ticket);
  t.true(sourceDone);
  const w = journal.take()!;
  t.deepEqual(idsOf(w), ['a', 'b']);
  t.is(w[0]!.runs.length, 2, 'done together: one time');
  t.is(journal.take(), undefined, 'taken once');
});

test('packBatchIds: a batch packed before its sinks finish lets its ids go; the journal gets them only once the batch is done', (t) => {
  const journal = new DoneIds(100);
  const batch: BatchIds = { ids: ['f.1', 'f.2', 'f.3'] };
  const ticket = openTicket(undefined, journal, batch)!;
  ticket.pending += 3; // three entries taken by one sink
  packBatchIds(journal, batch);
  t.deepEqual(batch.ids, [], 'the id strings are no longer held');
  settle(ticket);
  settle(ticket);
  settle(ticket);
  t.is(journal.take(), undefined, 'not done yet: no id is handed on');
  settle(ticket);
  t.deepEqual(idsOf(journal.take()!), ['f.1', 'f.2', 'f.3']);
});

test('DoneIds keeps no more than the window would', (t) => {
  const journal = new DoneIds(3);
  for (let i = 0; i < 10; i++) journal.add([`id${i}`], i);
  t.deepEqual(idsOf(journal.take()!), ['id7', 'id8', 'id9']);
  // batches done at two times: the oldest loses its oldest ids; an id with a line feed is not packed
  journal.add(['a', 'b'], 100);
  journal.add(['c', 'x\ny', 'd'], 200);
  journal.add(['e'], 200);
  const w = journal.take()!;
  t.deepEqual(idsOf(w), ['c', 'd', 'e']);
  t.deepEqual(w[0]!.runs, [200, 3]);
  journal.add(['a', 'b'], 100);
  journal.add(['c'], 200);
  t.deepEqual(journal.take()![0]!.runs, [100, 2, 200, 1]);
});
