// Chain protocol version 2 (DESIGN.md §25, docs/protocol.md) between real nodes: a sink offers it
// in its hello and speaks it when the source accepts; version 1 stays, in both directions: a sink
// that does not offer it (`protocol_version = 1`, or an older node) is read as JSON lines, and a
// source that does not accept it (an older node, answering `{"ok":1}`) gets JSON lines. The
// entries are the same either way, with compression too; a bad frame is a parse error, a frame
// over `max_line_bytes` ends the link.

import { connect } from 'node:net';
import test, { type ExecutionContext } from 'ava';
import { eachRun, encodeFrames, framedItem, PROTOCOL_V2 } from '../../src/core/entry-frame.js';
import { chainSinkToml, chainSourceToml, feedWithin60s, linkLine, parseReceived, QUICK_BACKOFF, RECEIVER_HEAD, receivedFrom, SENDER_HEAD } from '../helpers/chain.js';
import { freePort, killedNodesIn, type RunningNode, waitFor, waitReady } from '../helpers/node.js';
import { oldChainSource } from '../helpers/reports.js';
import { latestStatus } from '../helpers/status.js';

/** A temp dir and a node starter; the test's teardown kills the nodes. */
const fleet = (t: ExecutionContext) => killedNodesIn(t, []);
type Fleet = ReturnType<typeof fleet>;

const TOTAL = 4_000;
const INPUT = Array.from({ length: TOTAL }, (_, i) => `${linkLine(i)}\n`).join('');

const linkUp = (node: RunningNode) => node.records.find((r) => r.msg === 'Chain link up');

async function receiver(f: Fleet, port: number, config = ''): Promise<RunningNode> {
  const recv = f.start('recv', `${RECEIVER_HEAD}${chainSourceToml('in', 'tcp_chain', port, config)}[[pipelines.plugin_sinks]]\ntype = "stdout"\n[pipelines.plugin_sinks.config]\nbuffer_size = 5000\non_full = "block"\n`, ['--logging.level=debug']);
  await waitReady(recv, 'receiver');
  return recv;
}

async function sender(f: Fleet, name: string, port: number, config: string): Promise<RunningNode> {
  const send = f.start(name, `${SENDER_HEAD}${chainSinkToml('out', 'tcp_chain', port, name, `${QUICK_BACKOFF}${config}`)}`, ['--logging.level=debug'], true);
  await waitReady(send, name);
  return send;
}

for (const compression of ['none', 'gzip']) {
  test.serial(`a sink that offers version 2 and one that does not (protocol_version = 1), compression ${compression}: the same entries arrive, each link in its version`, async (t) => {
    t.timeout(120_000);
    const f = fleet(t);
    const port = await freePort();
    const recv = await receiver(f, port);
    const v2 = await sender(f, 'edge-2', port, `compression = "${compression}"\n`);
    const v1 = await sender(f, 'edge-1', port, `compression = "${compression}"\nprotocol_version = 1\n`);
    await Promise.all([v2, v1].map((s) => new Promise<void>((resolve, reject) => s.child.stdin!.write(INPUT, (err) => (err ? reject(err) : resolve())))));
    await waitFor(() => recv.out.length >= 2 * TOTAL, `all ${2 * TOTAL} entries at the receiver`, 60_000);
    t.is((await waitFor(() => linkUp(v2), 'Chain link up of edge-2')).protocol, 2, 'the default sink speaks version 2 to a source that accepts it');
    t.is((await waitFor(() => linkUp(v1), 'Chain link up of edge-1')).protocol, 1, 'protocol_version = 1 never offers it');
    const want = receivedFrom(recv, 'edge-1');
    t.is(want.length, TOTAL);
    t.deepEqual(receivedFrom(recv, 'edge-2'), want, 'in order, the same entries');
    t.deepEqual(want[1], { source: 'stdin', message: linkLine(1) });
    t.deepEqual(want[0], { source: 'stdin', level: 'WARN', message: 'json 0 "q" ä', fields: { user: { id: 0, name: 'ä"b\\c' }, tags: ['x', 0] } });
    // every byte a sender counts is one the source read (acknowledged entries: the link is idle then)
    const counters = await waitFor(() => {
      const r = latestStatus(recv, 'recv');
      const a = latestStatus(v2, 'send');
      const b = latestStatus(v1, 'send');
      return r && a && b && a['sinks.out.unacked'] === 0 && b['sinks.out.unacked'] === 0 && Number(r['sources.in.bytes_received']) === Number(a['sinks.out.bytes_sent']) + Number(b['sinks.out.bytes_sent']) ? { a, b } : undefined;
    }, 'bytes_received equal to the bytes both senders sent');
    t.log(`raw bytes: version 2 ${counters.a['sinks.out.bytes_raw']}, version 1 ${counters.b['sinks.out.bytes_raw']}; on the wire ${counters.a['sinks.out.bytes_sent']} and ${counters.b['sinks.out.bytes_sent']}`);
    t.true(Number(counters.a['sinks.out.bytes_raw']) < Number(counters.b['sinks.out.bytes_raw']), 'frames take fewer bytes than JSON lines');
  });
}

test.serial('a new sink against a source that predates version 2 (it answers {"ok":1}) offers it, then sends JSON lines', async (t) => {
  t.timeout(60_000);
  const f = fleet(t);
  const old = await oldChainSource();
  t.teardown(() => old.close());
  const send = await sender(f, 'edge', old.port, '');
  await feedWithin60s(send.child.stdin!, 100, 100, 0);
  await waitFor(() => old.lines.length >= 100, 'the 100 entries at the old source');
  t.regex(old.hellos[0]!, /"offer":\{.*"version":2/);
  const entries = old.lines.map((l) => JSON.parse(l) as { message: string; id?: string });
  t.deepEqual(
    entries.map((e) => e.message),
    Array.from({ length: 100 }, (_, i) => `entry ${String(i).padStart(6, '0')}`),
  );
  t.true(entries.every((e) => typeof e.id === 'string'), 'JSON lines with their ids');
  // the service log comes through the primary: waited for
  t.is((await waitFor(() => linkUp(send), 'Chain link up')).protocol, 1);
});

test.serial('entries framed in version 2 ahead of the first link (held as frames alone) reach a source that predates version 2 as JSON lines, whole', async (t) => {
  t.timeout(60_000);
  const f = fleet(t);
  const port = await freePort();
  // nothing listens yet: the sink offers version 2, so the pipeline frames what it reads in it
  // and keeps the frames alone (every sink of the pipeline is a tcp_chain sink)
  const send = f.start('edge', `${SENDER_HEAD}${chainSinkToml('out', 'tcp_chain', port, 'edge', QUICK_BACKOFF)}`, ['--logging.level=debug'], true);
  await waitFor(() => send.records.find((r) => r.msg === 'Chain link cannot connect, retrying'), 'the link down at start');
  await feedWithin60s(send.child.stdin!, 100, 100, 0);
  await waitFor(() => Number(latestStatus(send, 'send')?.['sinks.out.unacked']) === 100 || Number(latestStatus(send, 'send')?.['sources.stdin.total_entries']) === 100, 'the 100 entries read and held');
  const old = await oldChainSource(port);
  t.teardown(() => old.close());
  await waitFor(() => old.lines.length >= 100, 'the 100 entries at the old source');
  t.is((await waitFor(() => linkUp(send), 'Chain link up')).protocol, 1);
  const entries = old.lines.map((l) => JSON.parse(l) as { message: string; id?: string; source?: string; time?: string });
  t.deepEqual(
    entries.map((e) => e.message),
    Array.from({ length: 100 }, (_, i) => `entry ${String(i).padStart(6, '0')}`),
  );
  t.true(entries.every((e) => typeof e.id === 'string' && e.source === 'stdin' && typeof e.time === 'string'), 'each with its id, source and time');
  t.is(new Set(entries.map((e) => e.id)).size, 100, 'ids kept, one per entry');
});

/** Frames of `entries` as a version 2 sink writes them. */
function framesOf(entries: readonly { message: string; id?: string }[]): Buffer {
  const items = entries.map((e) => framedItem({ time: Date.UTC(2026, 0, 1), source: 'raw', ...e }, '', undefined));
  encodeFrames(items, 0, items.length, 0, 'p');
  const runs: Buffer[] = [];
  eachRun(PROTOCOL_V2, items, 0, items.length, (b) => runs.push(b));
  return Buffer.concat(runs);
}

test.serial('a source reads the frames of a version 2 hello: a malformed frame is a parse error and skipped, a report frame on a link that took no reports too, a frame over max_line_bytes ends the link', async (t) => {
  t.timeout(60_000);
  const f = fleet(t);
  const port = await freePort();
  const recv = await receiver(f, port, 'max_line_bytes = 1024\n');
  const socket = connect({ host: '127.0.0.1', port });
  t.teardown(() => socket.destroy());
  socket.setEncoding('utf8');
  const got: string[] = [];
  let rest = '';
  let closed = false;
  socket.on('data', (chunk: string) => {
    rest += chunk;
    for (let nl = rest.indexOf('\n'); nl >= 0; nl = rest.indexOf('\n')) {
      got.push(rest.slice(0, nl));
      rest = rest.slice(nl + 1);
    }
  });
  socket.on('close', () => (closed = true));
  socket.on('error', () => undefined);
  await new Promise<void>((resolve) => socket.once('connect', resolve));
  socket.write('{"logrelay":1,"node":"raw-v2","offer":{"version":2}}\n');
  await waitFor(() => got[0], 'the answer to the hello');
  t.is(got[0], '{"ok":1,"accept":{"version":2}}');
  // two good frames, a frame of an unknown kind, a report frame (no reports accepted), a good one
  const unknownKind = Buffer.from([0, 0, 0, 0, 3, 9, 1, 2]);
  const report = Buffer.concat([Buffer.from([0, 0, 0, 0, 3, 2]), Buffer.from('{}')]);
  socket.write(Buffer.concat([framesOf([{ message: 'one', id: 'a' }, { message: 'two ✓' }]), unknownKind, report, framesOf([{ message: 'three' }])]));
  await waitFor(() => got.includes('{"ack":3}'), 'the three entries acknowledged');
  await waitFor(() => recv.out.length >= 3, 'the three entries at the receiver');
  t.deepEqual(
    parseReceived(recv.out).map((e) => [e.node, e.message]),
    [
      ['raw-v2', 'one'],
      ['raw-v2', 'two ✓'],
      ['raw-v2', 'three'],
    ],
  );
  await waitFor(() => Number(latestStatus(recv, 'recv')?.['sources.in.parse_errors']) === 2, 'parse_errors 2');
  // a frame whose length is over max_line_bytes: the link ends, with the error said first
  socket.write(framesOf([{ message: 'x'.repeat(2000) }]));
  await waitFor(() => closed, 'the link closed');
  t.true(got.some((l) => l === '{"error":"frame over max_line_bytes (1024)"}'), got.join(' | '));
  await waitFor(() => Number(latestStatus(recv, 'recv')?.['sources.in.parse_errors']) === 3, 'parse_errors 3');
  t.is(recv.out.length, 3, 'nothing of the long frame was taken');
});
