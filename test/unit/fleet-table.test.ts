// The fleet table and node reports in memory: states by the reporting interval, the bounds, and
// who may report for whom behind `auth`.

import test from 'ava';
import { asNodeReport, speaksFor } from '../../src/core/node-report.js';
import { FleetTable } from '../../src/primary/fleet.js';

const report = (node: string, via: string[] = [], interval_ms = 1000) => asNodeReport({ node, interval_ms, pipelines: [{ name: 'p', lag_bytes: 5 }], via })!;

test('a node is live within 3 of its intervals, silent after, gone after forget_after_ms and then removed (counted)', (t) => {
  const table = new FleetTable({ enabled: true, max_nodes: 10, forget_after_ms: 60_000 });
  table.take(report('a', [], 1000), 0);
  table.take(report('b', ['r'], 10_000), 0);
  const state = (now: number) => Object.fromEntries(table.view(now).map((n) => [n.node, n.state]));
  t.deepEqual(state(3000), { a: 'live', b: 'live' });
  t.deepEqual(state(3001), { a: 'silent', b: 'live' });
  t.deepEqual(state(60_001), { a: 'gone', b: 'gone' });
  table.take(report('b', ['r'], 10_000), 30_000);
  table.sweep(60_001);
  t.deepEqual(state(60_001), { b: 'silent' }, 'b: 30,001 ms since its report, 3 of its intervals');
  t.deepEqual(table.forgotten, { max_nodes: 0, forget_after: 1 });
  t.deepEqual(table.view(60_001)[0]!.via, ['r']);
});

test('past max_nodes the node heard of longest ago is forgotten, counted; a node heard of again moves to the back', (t) => {
  const table = new FleetTable({ enabled: true, max_nodes: 3, forget_after_ms: 60_000 });
  for (const [i, n] of ['a', 'b', 'c'].entries()) table.take(report(n), i);
  table.take(report('a'), 10);
  table.take(report('d'), 11);
  t.deepEqual(table.view(12).map((n) => n.node).sort(), ['a', 'c', 'd']);
  t.is(table.forgotten.max_nodes, 1);
  const sample = table.sample(12);
  t.deepEqual(sample.states, { live: 3, silent: 0, gone: 0 });
  t.deepEqual(sample.nodes.map((n) => [n.node, n.lagBytes]).sort(), [['a', 5], ['c', 5], ['d', 5]]);
});

test('behind auth a peer speaks for itself (no via) and for what it forwarded (via ends with it), nothing else', (t) => {
  t.true(speaksFor('relay-a', report('relay-a')));
  t.true(speaksFor('relay-a', report('edge', ['relay-a'])));
  t.true(speaksFor('relay-b', report('edge', ['relay-a', 'relay-b'])));
  t.false(speaksFor('relay-a', report('edge')));
  t.false(speaksFor('relay-a', report('edge', ['relay-a', 'relay-b'])));
  t.false(speaksFor('relay-a', report('relay-a', ['relay-b'])));
});

test('a report needs a node name, a positive interval, a list of pipelines and a path of names', (t) => {
  t.truthy(asNodeReport({ node: 'a', interval_ms: 1, pipelines: [] }));
  t.deepEqual(asNodeReport({ node: 'a', interval_ms: 1, pipelines: [] })!.via, []);
  for (const bad of [null, [], 'x', { node: '', interval_ms: 1, pipelines: [] }, { node: 'a', interval_ms: 0, pipelines: [] }, { node: 'a', interval_ms: 1 }, { node: 'a', interval_ms: 1, pipelines: [], via: [1] }, { node: 'a', interval_ms: 1, pipelines: [], via: Array(17).fill('r') }]) {
    t.is(asNodeReport(bad), undefined, JSON.stringify(bad));
  }
});
