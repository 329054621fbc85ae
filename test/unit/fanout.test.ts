// Fan-out policies (DESIGN.md §7): `all` drops for a full dropping sink and pauses for a full
// blocking one; `any` skips full or dead paths, pauses only when no path has room, and moves a
// broken link's items to a live one.

import test from 'ava';
import { settle as settleTicket, type Ticket } from '../../src/core/ack.js';
import { BoundedQueue, type OnFull } from '../../src/core/queue.js';
import type { SinkItem } from '../../src/sinks/types.js';
import { eachRun, encodeFrames, framedItem, framedItems, PROTOCOL_V2 } from '../../src/core/entry-frame.js';
import { bySinks, createFanout, type SinkRunner } from '../../src/worker/fanout.js';

function runner(id: string, bufferSize: number, onFull: OnFull = 'drop', live = () => true): SinkRunner {
  return {
    sink: { id, type: 'test', counters: {}, bufferSize, bufferMaxBytes: 1 << 24, onFull, write() {}, async close() {}, linkUp: live },
    queue: new BoundedQueue<SinkItem>(bufferSize),
    counters: { total_processed: 0 },
    busy: true, // nothing is written meanwhile: the queues only fill
  };
}

const item = (ticket?: Ticket): SinkItem => ({ entry: { time: 0, source: 's', message: 'm' }, line: 'm', ticket, paths: 0 });

test('all: every sink gets the item; a full dropping sink drops it and owes nothing for it', (t) => {
  const a = runner('a', 1);
  const b = runner('b', 5);
  let dropped = 0;
  const f = createFanout('all', [a, b], { pump: () => {}, dropped: () => dropped++ });
  const ticket: Ticket = { pending: 0, done: () => {} };
  f.offer(item(ticket));
  f.offer(item(ticket));
  t.is(a.queue.length, 1);
  t.is(b.queue.length, 2);
  t.is(dropped, 1);
  t.is(ticket.pending, 3, 'two for b, one for a');
  t.false(f.full(), 'no blocking sink: the sources never pause');
});

test('all: a full blocking sink pauses the sources until it is below half', (t) => {
  const a = runner('a', 2, 'block');
  const f = createFanout('all', [a], { pump: () => {}, dropped: () => t.fail('a blocking sink never drops') });
  f.offer(item());
  t.false(f.full());
  f.offer(item());
  t.true(f.full());
  a.queue.take(1);
  t.false(f.belowHalf(), 'one of two is not below half');
  a.queue.take(1);
  t.true(f.belowHalf());
});

test('any: both paths take an item while both have room; a full one skips, and counts it', (t) => {
  const a = runner('a', 2);
  const b = runner('b', 4);
  const f = createFanout('any', [a, b], { pump: () => {}, dropped: () => t.fail('any never drops') });
  const ticket: Ticket = { pending: 0, done: () => {} };
  for (let i = 0; i < 4; i++) f.offer(item(ticket));
  t.is(a.queue.length, 2);
  t.is(b.queue.length, 4);
  t.is(a.counters.skipped, 2);
  t.is(b.counters.skipped, 0);
  t.is(ticket.pending, 6);
  t.true(f.full(), 'every path is full: now the sources pause');
  b.queue.take(4);
  t.true(f.belowHalf(), 'one path with room is enough');
});

test('any: a dead path is skipped while a live one has room, and its fullness does not pause', (t) => {
  let aUp = false;
  const a = runner('a', 2, 'drop', () => aUp);
  const b = runner('b', 2);
  const f = createFanout('any', [a, b], { pump: () => {}, dropped: () => {} });
  f.offer(item());
  t.is(a.queue.length, 0);
  t.is(a.counters.skipped, 1);
  t.is(b.queue.length, 1);
  f.offer(item());
  t.true(f.full(), 'the live path is full');
  aUp = true;
  t.false(f.full(), 'the path came back with room');
});

test('any: a broken link hands its items and its queue to a live path; with none live it keeps them', (t) => {
  let aUp = true;
  let bUp = true;
  const a = runner('a', 10, 'drop', () => aUp);
  const b = runner('b', 10, 'drop', () => bUp);
  const f = createFanout('any', [a, b], { pump: () => {}, dropped: () => {} });
  let done = 0;
  const ticket: Ticket = { pending: 1, done: () => done++ };
  const held = [item(ticket), item(ticket)];
  ticket.pending += 2; // a holds both, unacknowledged
  a.queue.push(item(ticket)); // queued on a only (b skipped it)
  ticket.pending += 1;
  aUp = false;
  bUp = false;
  t.false(f.failover(a, held), 'no live path: a keeps what it holds');
  bUp = true;
  t.true(f.failover(a, held));
  t.is(b.queue.length, 3, 'two held items and a queued one moved to b');
  t.is(a.queue.length, 0);
  t.is(a.counters.failed_over, 3);
  t.is(ticket.pending, 4, 'b owes three deliveries, plus the hold: a owes none');
  t.is(done, 0);
});

test('any: failover never offers an item to a path that holds it or delivered it (one relay down from the start)', (t) => {
  // Both links dial at start: neither is up, so both take every item (no path is preferred yet).
  let bUp = false;
  const a = runner('a', 10, 'drop', () => false);
  const b = runner('b', 10, 'drop', () => bUp);
  const f = createFanout('any', [a, b], { pump: () => {}, dropped: () => {} });
  let done = 0;
  const tickets: Ticket[] = [];
  for (let i = 0; i < 4; i++) {
    const ticket: Ticket = { pending: 0, done: () => done++ };
    tickets.push(ticket);
    f.offer(item(ticket));
  }
  t.is(a.queue.length, 4);
  t.is(b.queue.length, 4);
  // b connects and delivers two of its four; a never connects and gives up what it took (two
  // written, two still queued)
  bUp = true;
  for (const it of b.queue.take(2)) settleTicket(it.ticket!);
  const written = a.queue.take(2);
  t.true(f.failover(a, written));
  t.is(b.queue.length, 2, 'b got no second copy of anything: it holds two and delivered two');
  t.is(a.queue.length, 0);
  t.is(a.counters.failed_over, 0, 'nothing was handed over: b has it all');
  t.deepEqual(tickets.map((x) => x.pending), [0, 0, 1, 1], 'what is left owed is b\'s queued share');
  t.is(done, 2);
  // an item only the broken path holds still goes over
  bUp = false;
  const c = runner('c', 10, 'drop', () => true);
  const g = createFanout('any', [a, c], { pump: () => {}, dropped: () => {} });
  const only = item({ pending: 0, done: () => done++ });
  only.paths = 1; // a holds it, c does not
  a.queue.push(only);
  only.ticket!.pending++;
  t.true(g.failover(a, []));
  t.is(c.queue.length, 1);
  t.is(a.counters.failed_over, 1);
});

/** A runner whose link is down (`linkDown`) while `down()` says so. */
function autoRunner(id: string, bufferSize: number, down: () => boolean): SinkRunner {
  const r = runner(id, bufferSize, 'auto', () => !down());
  return { ...r, sink: { ...r.sink, linkDown: down } };
}

test('all, auto: a full sink blocks while its link is up or no other sink is live; a dead one beside a live one drops, as link_down', (t) => {
  let aDown = false;
  const a = autoRunner('a', 2, () => aDown);
  const reasons: string[] = [];
  const f = createFanout('all', [a], { pump: () => {}, dropped: (_r, reason) => reasons.push(reason) });
  f.offer(item());
  f.offer(item());
  t.true(f.full(), 'link up: a full auto sink pauses the sources');
  aDown = true;
  f.offer(item());
  t.true(f.full(), 'link down but no other sink: it still blocks');
  t.deepEqual(reasons, []);

  let bDown = false;
  const b = autoRunner('b', 2, () => bDown);
  const live = runner('live', 100);
  const g = createFanout('all', [b, live], { pump: () => {}, dropped: (_r, reason) => reasons.push(reason) });
  g.offer(item());
  g.offer(item());
  t.true(g.full());
  bDown = true;
  t.false(g.full(), 'a dead link beside a live sink no longer pauses the pipeline');
  g.offer(item());
  t.deepEqual(reasons, ['link_down']);
  t.is(live.queue.length, 3);
  bDown = false;
  t.true(g.full(), 'back up: it blocks again');
});

test('balance: each item goes to one sink, round robin over the live ones with room; a dead or full one is passed over', (t) => {
  let bLive = true;
  const a = runner('a', 3);
  const b = runner('b', 3, 'drop', () => bLive);
  const c = runner('c', 3);
  const f = createFanout('balance', [a, b, c], { pump: () => {}, dropped: () => t.fail('balance never drops') });
  const ticket: Ticket = { pending: 0, done: () => {} };
  for (let i = 0; i < 3; i++) f.offer(item(ticket));
  t.deepEqual([a.queue.length, b.queue.length, c.queue.length], [1, 1, 1]);
  t.is(ticket.pending, 3, 'one delivery owed per item');
  bLive = false;
  for (let i = 0; i < 2; i++) f.offer(item(ticket));
  t.deepEqual([a.queue.length, b.queue.length, c.queue.length], [2, 1, 2], 'the dead path gets nothing');
  f.offer(item());
  f.offer(item());
  t.deepEqual([a.queue.length, c.queue.length], [3, 3]);
  t.true(f.full(), 'every live path is full: the sources pause (the dead one has room but does not count)');
  bLive = true;
  t.false(f.full(), 'a live path with room: no pause');
  f.offer(item());
  t.is(b.queue.length, 2, 'the only one with room takes it');
});

test('balance: sources pause only when every live path is full, and resume when one is below half', (t) => {
  const a = runner('a', 2);
  const b = runner('b', 2);
  const f = createFanout('balance', [a, b], { pump: () => {}, dropped: () => t.fail('balance never drops') });
  f.offer(item());
  f.offer(item());
  f.offer(item());
  t.false(f.full(), 'one path still has room');
  f.offer(item());
  t.true(f.full());
  a.queue.take(2);
  t.true(f.belowHalf());
});

test('balance: a broken link hands its unacknowledged items and its queue to a live path', (t) => {
  let aLive = true;
  const a = runner('a', 10, 'drop', () => aLive);
  const b = runner('b', 10);
  const f = createFanout('balance', [a, b], { pump: () => {}, dropped: () => t.fail('balance never drops') });
  let done = 0;
  const ticket: Ticket = { pending: 0, done: () => done++ };
  const items = Array.from({ length: 4 }, () => item(ticket));
  for (const it of items) f.offer(it);
  t.deepEqual([a.queue.length, b.queue.length], [2, 2]);
  const held = a.queue.take(1); // "sent", unacknowledged
  aLive = false;
  t.true(f.failover(a, held));
  t.is(a.queue.length, 0);
  t.is(b.queue.length, 4, 'the held item and the queued one moved over');
  t.is(a.counters.failed_over, 2);
  // the broken path's share of the held item was let go; the queued one carried its share over
  t.is(ticket.pending, 4);
  for (const it of b.queue.take(4)) settleTicket(it.ticket);
  t.is(ticket.pending, 0);
});

test('balance: the frames of the entries one sink took from a batch are written next to each other, so its batch is one run (one write)', (t) => {
  const a = runner('a', 100);
  const b = runner('b', 100);
  const f = createFanout('balance', [a, b], { pump: () => {}, dropped: () => t.fail('balance never drops') });
  const items = Array.from({ length: 10 }, (_, i) => framedItem({ time: 0, source: 's', message: `m${i}` }, `m${i}`, undefined));
  for (const it of items) f.offer(it);
  const grouped = bySinks(items);
  t.deepEqual(
    grouped.map((x) => x.entry.message),
    ['m0', 'm2', 'm4', 'm6', 'm8', 'm1', 'm3', 'm5', 'm7', 'm9'],
    "each sink's items together, each in its order",
  );
  encodeFrames(grouped, 0, grouped.length, 0, 'p');
  for (const r of [a, b]) {
    const taken = r.queue.take(100);
    let runs = 0;
    eachRun(PROTOCOL_V2, framedItems(taken), 0, taken.length, () => runs++);
    t.is(runs, 1, `sink ${r.sink.id}: its 5 frames in one run`);
  }
  t.is(bySinks(items.slice(0, 1)).length, 1);
  const same = items.map((x) => ({ ...x, paths: 1 }));
  t.is(bySinks(same), same, 'all taken by the same sinks: the batch as it is');
});
