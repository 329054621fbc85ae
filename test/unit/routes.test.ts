// Routing among a pipeline's sinks (DESIGN.md §24): each entry reaches the sinks its route names,
// the fan-out applies among those; under `fanout = "any"` two sinks with the same `when` are the
// redundant paths of their route, so a broken link's entries fail over to the other one only.

import test from 'ava';
import type { SinkConfig } from '../../src/config/schema.js';
import type { Ticket } from '../../src/core/ack.js';
import { BoundedQueue } from '../../src/core/queue.js';
import type { Entry } from '../../src/core/entry.js';
import type { SinkItem } from '../../src/sinks/types.js';
import type { SinkRunner } from '../../src/worker/fanout.js';
import { compileTransforms } from '../../src/transform/index.js';
import { checkRoutes } from '../../src/transform/routes.js';
import { createRoutedFanout } from '../../src/worker/routes.js';

/** The routes' code, as worker/transform-code.ts loads it for a pipeline that routes. */
const CODE = { compileTransforms, checkRoutes };

function runner(id: string, slot: number, live: { up: boolean } = { up: true }): SinkRunner {
  return {
    sink: { id, type: 'test', counters: {}, bufferSize: 100, bufferMaxBytes: 1 << 24, onFull: 'drop', write() {}, async close() {}, linkUp: () => live.up },
    queue: new BoundedQueue<SinkItem>(100),
    counters: { total_processed: 0 },
    busy: true,
    slot,
  };
}

const sink = (id: string, route: Partial<SinkConfig> = {}): SinkConfig => ({ id, type: 'test', config: {}, ...route });
const item = (entry: Partial<Entry>, ticket?: Ticket): SinkItem => ({ entry: { time: 0, source: 's', message: 'm', ...entry }, line: 'm', ticket, paths: 0 });
const messages = (r: SinkRunner) => r.queue.take(100).map((i) => i.entry.message);

test('all: when sinks get their entries, else what no when sink took, plain sinks everything; unrouted counted', (t) => {
  const sinks = [sink('err', { when: "level >= 'error'" }), sink('warn', { when: "level == 'warn'" }), sink('rest', { else: true }), sink('archive')];
  const runners = sinks.map((s, i) => runner(s.id, i));
  const counters: { unrouted?: number } = {};
  const f = createRoutedFanout('all', runners, sinks, { pump: () => {}, dropped: () => t.fail() }, { counters }, CODE);
  const ticket: Ticket = { pending: 0, done: () => {} };
  f.offer(item({ message: 'e', level: 'ERROR' }, ticket));
  f.offer(item({ message: 'w', level: 'WARN' }, ticket));
  f.offer(item({ message: 'i', level: 'INFO' }, ticket));
  t.deepEqual(runners.map(messages), [['e'], ['w'], ['i'], ['e', 'w', 'i']]);
  t.is(ticket.pending, 6, 'one delivery owed per sink that took an entry');
  t.is(counters.unrouted, 0);

  const only = [sink('err', { when: "level >= 'error'" })];
  const c2: { unrouted?: number } = {};
  const g = createRoutedFanout('all', [runner('err', 0)], only, { pump: () => {}, dropped: () => {} }, { counters: c2 }, CODE);
  const t2: Ticket = { pending: 0, done: () => {} };
  g.offer(item({ level: 'INFO' }, t2));
  t.is(c2.unrouted, 1);
  t.is(t2.pending, 0, 'an unrouted entry owes nothing: it is done');
});

test('a dead letter sink gets no routed entries unless its own when takes them', (t) => {
  const sinks = [sink('up', { dead_letter: 'dl' }), sink('dl'), sink('dl2', { when: 'fields.x' })];
  const runners = sinks.map((s, i) => runner(s.id, i));
  const f = createRoutedFanout('all', runners, sinks, { pump: () => {}, dropped: () => {} }, { counters: {} }, CODE);
  f.offer(item({ message: 'a' }));
  f.offer(item({ message: 'b', fields: { x: 1 } }));
  t.deepEqual(runners.map(messages), [['a', 'b'], [], ['b']]);
});

test('any: the two sinks of one route are its redundant paths: a broken link fails over to the other, never to another route', (t) => {
  const aLive = { up: true };
  const sinks = [sink('err_a', { when: "level >= 'error'" }), sink('err_b', { when: "level >= 'error'" }), sink('all')];
  const runners = [runner('err_a', 0, aLive), runner('err_b', 1), runner('all', 2)];
  const f = createRoutedFanout('any', runners, sinks, { pump: () => {}, dropped: () => t.fail() }, { counters: {} }, CODE);
  // err_b full, so the error entry takes err_a and the archive only
  for (let i = 0; i < 100; i++) runners[1]!.queue.push(item({ message: 'filler' }));
  const ticket: Ticket = { pending: 0, done: () => {} };
  f.offer(item({ message: 'boom', level: 'ERROR' }, ticket));
  t.is(runners[0]!.queue.length, 1);
  t.is(runners[2]!.queue.length, 1);
  t.is(runners[1]!.counters.skipped, 1);
  runners[1]!.queue.take(100);
  // err_a's link breaks holding the entry: it fails over to err_b, not to `all` (which holds it already and is another route)
  aLive.up = false;
  const held = runners[0]!.queue.take(1);
  t.true(f.failover(runners[0]!, held));
  t.deepEqual(messages(runners[1]!), ['boom']);
  t.deepEqual(messages(runners[2]!), ['boom'], 'the archive still has only its own copy');
  t.is(runners[0]!.counters.failed_over, 1);
});
