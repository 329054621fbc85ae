// Items held as their version 2 frame alone (releaseEntries, core/entry-frame.ts): a pipeline whose
// every sink is content with the frame lets go of the entry and line once framed; a link that must
// send such items in version 1 after all gets each entry back from its frame (restoreEntries,
// core/frame-reader.ts), the same line as the entry itself would have made.

import test from 'ava';
import { encodeAhead, type FramedItem, framedItem, PROTOCOL_V2, releaseEntries } from '../../src/core/entry-frame.js';
import { eachWireRun, encodeWire } from '../../src/core/entry-wire.js';
import type { Entry } from '../../src/core/entry.js';
import { restoreEntries } from '../../src/core/frame-reader.js';
import { itemBytes } from '../../src/core/sink-item.js';

const NOW = Date.UTC(2026, 10, 28, 1, 2, 3, 4);

/** Entries of the shapes a file or chain source makes: levels, ids, fields, a node, non-ASCII text, no time. */
const ENTRIES: Entry[] = [
  { time: NOW, source: 'app.log', message: 'backlog1-0000001 xxxxxxxx', id: 'AbcdefghijklmnoP.1a' },
  { time: NOW + 1, source: 'app.log', level: 'ERROR', message: 'ERROR disk "full" \\ tab\there', id: 'AbcdefghijklmnoP.2b' },
  { time: NOW + 2.5, source: 'audit', node: 'edge-7', message: 'héllo € 😀 \u2028', id: 'x' },
  { time: NOW, source: 'app', level: 'WARN', message: '{"not":"parsed"}', fields: { user: 'ann', n: [1, { k: true }] }, id: 'q.3' },
  { time: Number.NaN, source: '', message: 'no time, no source' },
];

/** The version 1 line of each item, as the link would write it. */
function linesOf(items: FramedItem[]): string {
  encodeWire(items, 0, items.length, NOW, 'pipe');
  const parts: Buffer[] = [];
  eachWireRun(items, 0, items.length, (b) => parts.push(b));
  return Buffer.concat(parts).toString('utf8');
}

test('a released item keeps its frame, ticket and weight; its entry and line are let go', (t) => {
  const ticket = { pending: 1, done: () => undefined };
  const items = ENTRIES.map((e) => framedItem(e, e.message, ticket));
  const unframed = framedItem({ time: NOW, source: 's', message: 'not framed' }, 'not framed', ticket);
  encodeAhead(items, 1 << PROTOCOL_V2, NOW, 'pipe');
  const frames = items.map((i) => i.frameBuf!.subarray(i.frameAt, i.frameEnd).toString('hex'));
  releaseEntries([...items, unframed]);
  for (const [k, item] of items.entries()) {
    t.is(item.entry as Entry | undefined, undefined, `entry ${k} let go`);
    t.is(item.line, '');
    t.is(itemBytes(item), ENTRIES[k]!.message.length, 'weighs what its line did');
    t.is(item.ticket, ticket);
    t.is(item.frameBuf!.subarray(item.frameAt, item.frameEnd).toString('hex'), frames[k]!, 'the frame unchanged');
  }
  t.is(unframed.entry.message, 'not framed', 'an item without a frame keeps its entry');
});

test('a released item sent in version 1 after all gets its entry back from its frame: the same line as the entry made', (t) => {
  const kept = ENTRIES.map((e) => framedItem(e, e.message, undefined));
  const released = ENTRIES.map((e) => framedItem(e, e.message, undefined));
  encodeAhead(released, 1 << PROTOCOL_V2, NOW, 'pipe');
  releaseEntries(released);
  restoreEntries(released, 0, released.length, NOW, 'pipe');
  t.is(linesOf(released), linesOf(kept));
  // restored from the frame: the message as read, the level, fields and node back as they were
  t.is(released[2]!.entry.message, 'héllo € 😀 \u2028');
  t.is(released[2]!.entry.node, 'edge-7');
  t.deepEqual(released[3]!.entry.fields, { user: 'ann', n: [1, { k: true }] });
  t.is(released[1]!.entry.level, 'ERROR');
});

test('restoreEntries leaves items that kept their entry as they are, and restores only its range', (t) => {
  const items = ENTRIES.map((e) => framedItem(e, e.message, undefined));
  encodeAhead(items, 1 << PROTOCOL_V2, NOW, 'pipe');
  const first = items[0]!.entry;
  releaseEntries(items.slice(1));
  restoreEntries(items, 0, 3, NOW, 'pipe');
  t.is(items[0]!.entry, first, 'the same object, not decoded again');
  t.is(items[1]!.entry.message, ENTRIES[1]!.message);
  t.is(items[2]!.entry.message, ENTRIES[2]!.message);
  t.is(items[3]!.entry as Entry | undefined, undefined, 'past the range: still released');
});
