// The http sink's replay ring: what a client that last saw a given id gets, and the bound.

import test from 'ava';
import { ReplayRing } from '../../src/net/replay-ring.js';

function after<T>(ring: ReplayRing<T>, id: number): [number, T][] {
  const out: [number, T][] = [];
  ring.forEachAfter(id, (i, item) => out.push([i, item]));
  return out;
}

test('keeps the last `capacity` items in order and gives those above an id', (t) => {
  const ring = new ReplayRing<string>(3);
  t.deepEqual(after(ring, 0), []);
  ring.push(101, 'a');
  ring.push(102, 'b');
  t.deepEqual(after(ring, 0), [
    [101, 'a'],
    [102, 'b'],
  ]);
  ring.push(103, 'c');
  ring.push(104, 'd');
  ring.push(105, 'e');
  t.is(ring.length, 3);
  t.deepEqual(after(ring, 0), [
    [103, 'c'],
    [104, 'd'],
    [105, 'e'],
  ]);
  t.deepEqual(after(ring, 104), [[105, 'e']]);
  t.deepEqual(after(ring, 105), [], 'a client that saw everything gets nothing');
  t.deepEqual(after(ring, 9999), [], 'an id from a sink that ran ahead gets nothing');
});

test('capacity 0 keeps nothing', (t) => {
  const ring = new ReplayRing<string>(0);
  ring.push(1, 'a');
  t.is(ring.length, 0);
  t.deepEqual(after(ring, 0), []);
});
