// Items held as their version 2 frame alone (releaseEntries, core/entry-frame.ts): a pipeline whose
// every sink is content with the frame lets go of the entry and line once framed; a link that must
// send such items in version 1 after all gets each entry back from its frame (restoreEntries,
// core/frame-reader.ts), the same line as the entry itself would have made. The http_chain sink is
// content with frames too (a relay's pipeline then holds frames alone): posting NDJSON after all, it
// restores the entries first.

import { createServer } from 'node:http';
import type { AddressInfo } from 'node:net';
import test from 'ava';
import { encodeAhead, type FramedItem, framedItem, PROTOCOL_V2, releaseEntries } from '../../src/core/entry-frame.js';
import { eachWireRun, encodeWire } from '../../src/core/entry-wire.js';
import type { Entry } from '../../src/core/entry.js';
import { restoreEntries } from '../../src/core/frame-reader.js';
import { createLogger } from '../../src/core/log.js';
import { itemBytes } from '../../src/core/sink-item.js';
import { createHttpChainSink } from '../../src/sinks/http-chain.js';

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

test('an http_chain sink is content with frames; items held as frames alone, posted as NDJSON (the source reads version 1 only), arrive whole', async (t) => {
  t.timeout(30_000);
  // a source that predates version 2: a 204 to NDJSON that names no version, 400 to anything else
  const bodies: string[] = [];
  const srv = createServer((req, res) => {
    const chunks: Buffer[] = [];
    req.on('data', (c: Buffer) => chunks.push(c));
    req.on('end', () => {
      const ndjson = req.headers['x-logrelay-protocol'] === '1' && req.headers['content-type'] === 'application/x-ndjson';
      const body = Buffer.concat(chunks).toString('utf8');
      if (ndjson && body !== '') bodies.push(body);
      res.writeHead(ndjson ? 204 : 400, ndjson ? { 'X-Logrelay-Accepted': String(body.split('\n').filter((l) => l !== '').length) } : {});
      res.end();
    });
  });
  await new Promise<void>((resolve) => srv.listen(0, '127.0.0.1', resolve));
  t.teardown(() => {
    srv.closeAllConnections();
    srv.close();
  });
  const log = createLogger('silent', { write: () => undefined });
  const sink = createHttpChainSink({ id: 'o', type: 'http_chain', config: { host: '127.0.0.1', port: (srv.address() as AddressInfo).port, flush_interval_ms: 10 } }, { pipeline: 'pipe', log, checkOnly: false, node: 'n' });
  t.true(sink.framesSuffice, 'a pipeline of http_chain sinks lets go of its entries once framed');
  await sink.open?.();
  // framed in version 2 and let go, as the pipeline does while the link speaks it; the link then
  // speaks version 1 (here: from the start, the source never named version 2)
  let settled = 0;
  const ticket = { pending: ENTRIES.length, done: () => void settled++ };
  const items = ENTRIES.map((e) => framedItem(e, e.message, ticket));
  encodeAhead(items, 1 << PROTOCOL_V2, NOW, 'pipe');
  releaseEntries(items);
  t.is(sink.wireVersion?.(), 1);
  await sink.write(items);
  const deadline = Date.now() + 20_000;
  while (bodies.join('').split('\n').filter((l) => l !== '').length < ENTRIES.length && Date.now() < deadline) await new Promise((r) => setTimeout(r, 20));
  const posted = bodies.join('');
  t.is(posted, linesOf(ENTRIES.map((e) => framedItem(e, e.message, undefined))), 'each entry whole, as its own line would have been posted');
  await sink.close(Date.now() + 5_000);
  t.is(settled, 1, 'the ticket settled once the source acknowledged');
});
