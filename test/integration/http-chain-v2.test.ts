// Chain protocol version 2 over HTTP (docs/protocol.md): an http_chain sink posts NDJSON until a
// 204 of the source names version 2 in `X-Logrelay-Accept-Protocol`, then entry frames
// (`Content-Type: application/x-logrelay-frames`, `X-Logrelay-Protocol: 2`). Version 1 stays, in
// both directions: a sink with `protocol_version = 1` (or an older node) is read as NDJSON, a
// source that predates version 2 keeps getting NDJSON, and a version 2 batch such a source
// refuses (400, or 415) is sent again as NDJSON, never lost. The source reads frames with gzip,
// within max_body_bytes; a 413 splits a batch of frames at a frame.

import { createServer, type IncomingMessage, request, type Server } from 'node:http';
import { type AddressInfo, connect, createServer as createTcpServer, type Socket } from 'node:net';
import { gzipSync } from 'node:zlib';
import test, { type ExecutionContext } from 'ava';
import { eachRun, encodeFrames, framedItem, PROTOCOL_V2 } from '../../src/core/entry-frame.js';
import { decodeEntryFrame, FrameReader } from '../../src/core/frame-reader.js';
import { chainSinkToml, chainSourceToml, feedWithin60s, linkLine, parseReceived, QUICK_BACKOFF, RECEIVER_HEAD, receivedFrom, SENDER_HEAD } from '../helpers/chain.js';
import { freePort, killedNodesIn, type RunningNode, waitFor, waitReady } from '../helpers/node.js';
import { latestStatus } from '../helpers/status.js';

const FRAMES = 'application/x-logrelay-frames';

/** A temp dir and a node starter; the test's teardown kills the nodes. */
const fleet = (t: ExecutionContext) => killedNodesIn(t, []);
type Fleet = ReturnType<typeof fleet>;

const TOTAL = 3_000;
const INPUT = Array.from({ length: TOTAL }, (_, i) => `${linkLine(i)}\n`).join('');

/**
 * A TCP proxy on 127.0.0.1 in front of `port` that keeps what the clients sent (Latin-1), so a
 * test sees the requests' headers as they went over the wire.
 */
async function recordingProxy(t: ExecutionContext, port: number): Promise<{ port: number; sent: () => string }> {
  const parts: string[] = [];
  const sockets: Socket[] = [];
  const srv = createTcpServer((client) => {
    const upstream = connect({ host: '127.0.0.1', port });
    sockets.push(client, upstream);
    client.on('data', (chunk: Buffer) => parts.push(chunk.toString('latin1')));
    client.pipe(upstream);
    upstream.pipe(client);
    client.on('error', () => upstream.destroy());
    upstream.on('error', () => client.destroy());
    client.on('close', () => upstream.destroy());
    upstream.on('close', () => client.destroy());
  });
  await new Promise<void>((resolve) => srv.listen(0, '127.0.0.1', resolve));
  t.teardown(() => {
    for (const s of sockets) s.destroy();
    srv.close();
  });
  return { port: (srv.address() as AddressInfo).port, sent: () => parts.join('') };
}

/** Requests in recorded client bytes whose Content-Type is `type`. */
const requestsOfType = (sent: string, type: string): number => sent.split(new RegExp(`\r\ncontent-type: ${type.replace(/[/.+-]/g, '\\$&')}\r\n`, 'i')).length - 1;

async function receiver(f: Fleet, port: number, config = '', flow = ''): Promise<RunningNode> {
  const recv = f.start('recv', `${RECEIVER_HEAD}${flow}${chainSourceToml('in', 'http_chain', port, config)}[[pipelines.plugin_sinks]]\ntype = "stdout"\n[pipelines.plugin_sinks.config]\nbuffer_size = 5000\non_full = "block"\n`, ['--logging.level=debug']);
  await waitReady(recv, 'receiver');
  return recv;
}

async function sender(f: Fleet, name: string, port: number, config: string, flushMs = 50): Promise<RunningNode> {
  const send = f.start(name, `${SENDER_HEAD}${chainSinkToml('out', 'http_chain', port, name, `${QUICK_BACKOFF}flush_interval_ms = ${flushMs}\n${config}`)}`, ['--logging.level=debug'], true);
  await waitReady(send, name);
  return send;
}

const write = (node: RunningNode, text: string) => new Promise<void>((resolve, reject) => node.child.stdin!.write(text, (err) => (err ? reject(err) : resolve())));

for (const compression of ['none', 'gzip']) {
  test.serial(`http_chain: a sink that posts version 2 frames and one that does not (protocol_version = 1), compression ${compression}: the same entries arrive, each link in its version`, async (t) => {
    t.timeout(120_000);
    const f = fleet(t);
    const port = await freePort();
    const recv = await receiver(f, port);
    const proxy2 = await recordingProxy(t, port);
    const proxy1 = await recordingProxy(t, port);
    const v2 = await sender(f, 'edge-2', proxy2.port, `compression = "${compression}"\n`);
    const v1 = await sender(f, 'edge-1', proxy1.port, `compression = "${compression}"\nprotocol_version = 1\n`);
    await Promise.all([write(v2, INPUT), write(v1, INPUT)]);
    await waitFor(() => recv.out.length >= 2 * TOTAL, `all ${2 * TOTAL} entries at the receiver`, 60_000);
    const want = receivedFrom(recv, 'edge-1');
    t.is(want.length, TOTAL);
    const got = receivedFrom(recv, 'edge-2');
    t.is(got.length, TOTAL, 'each entry once');
    // up to four batches are out at once: compared as sets of their JSON
    const wanted = new Set(want.map((e) => JSON.stringify(e)));
    const gotten = new Set(got.map((e) => JSON.stringify(e)));
    t.deepEqual([[...gotten].filter((e) => !wanted.has(e)).slice(0, 3), [...wanted].filter((e) => !gotten.has(e)).slice(0, 3)], [[], []], 'the same entries');
    t.true(
      want.some((e) => JSON.stringify(e) === JSON.stringify({ source: 'stdin', level: 'WARN', message: 'json 0 "q" ä', fields: { user: { id: 0, name: 'ä"b\\c' }, tags: ['x', 0] } })),
      'a JSON line with its level and fields',
    );
    // what went over the wire: frames from the default sink, NDJSON only from the other
    t.true(requestsOfType(proxy2.sent(), FRAMES) >= 1, 'the default sink posted frames');
    t.true(/\r\nx-logrelay-protocol: 2\r\n/i.test(proxy2.sent()), 'with X-Logrelay-Protocol: 2');
    t.is(requestsOfType(proxy1.sent(), FRAMES), 0, 'protocol_version = 1 never posts frames');
    t.true(requestsOfType(proxy1.sent(), 'application/x-ndjson') >= 1);
    if (compression === 'gzip') t.true(/\r\ncontent-encoding: gzip\r\n/i.test(proxy2.sent()), 'frames compressed with gzip');
    const status = await waitFor(() => {
      const s = latestStatus(recv, 'recv');
      return s && Number(s['sources.in.total_entries']) >= 2 * TOTAL ? s : undefined;
    }, 'the receiver counted every entry');
    t.is(status['sources.in.parse_errors'], 0);
  });
}

/** A plain HTTP server the test controls; `answer` gets every request with its body (the reports path gets 404). */
async function fakeSource(t: ExecutionContext, answer: (req: IncomingMessage, body: Buffer) => { status: number; headers?: Record<string, string> }): Promise<number> {
  const srv: Server = createServer((req, res) => {
    const chunks: Buffer[] = [];
    req.on('data', (c: Buffer) => chunks.push(c));
    req.on('end', () => {
      const a = req.url?.endsWith('/report') ? { status: 404 } : answer(req, Buffer.concat(chunks));
      res.writeHead(a.status, a.headers ?? {});
      res.end();
    });
  });
  await new Promise<void>((resolve) => srv.listen(0, '127.0.0.1', resolve));
  t.teardown(() => {
    srv.closeAllConnections();
    srv.close();
  });
  return (srv.address() as AddressInfo).port;
}

/** The messages of an NDJSON body. */
const messagesOf = (body: Buffer): string[] =>
  body
    .toString('utf8')
    .split('\n')
    .filter((l) => l !== '')
    .map((l) => (JSON.parse(l) as { message: string }).message);

/** How a source that predates version 2 answers: 400 to another protocol version, 204 with the count to NDJSON, nothing about versions. */
function oldSourceAnswer(req: IncomingMessage, body: Buffer, messages: string[]): { status: number; headers?: Record<string, string> } {
  if (req.headers['x-logrelay-protocol'] !== '1') return { status: 400 };
  const got = messagesOf(body);
  messages.push(...got);
  return { status: 204, headers: { 'X-Logrelay-Accepted': String(got.length) } };
}

const numberedMessages = (n: number) => Array.from({ length: n }, (_, i) => `entry ${String(i).padStart(6, '0')}`);

test.serial('http_chain: a new sink against a source that predates version 2 posts NDJSON only', async (t) => {
  t.timeout(60_000);
  const f = fleet(t);
  const types: (string | undefined)[] = [];
  const messages: string[] = [];
  const port = await fakeSource(t, (req, body) => {
    types.push(req.headers['content-type']);
    return oldSourceAnswer(req, body, messages);
  });
  const send = await sender(f, 'edge', port, '');
  await feedWithin60s(send.child.stdin!, 300, 50, 20);
  await waitFor(() => messages.length >= 300, 'the 300 entries at the old source');
  t.deepEqual([...messages].sort(), numberedMessages(300));
  t.true(types.length >= 2, 'the first contact and at least one batch');
  t.true(
    types.every((ct) => ct === 'application/x-ndjson'),
    `every request NDJSON: ${[...new Set(types)].join(', ')}`,
  );
});

for (const refusal of [400, 415]) {
  test.serial(`http_chain: a source that said it reads version 2 and then refuses frames with ${refusal} (an older node behind the same address) loses no batch: they are sent again as NDJSON`, async (t) => {
    t.timeout(60_000);
    const f = fleet(t);
    let refused = 0;
    let first = true;
    const messages: string[] = [];
    const port = await fakeSource(t, (req, body) => {
      if (first) {
        // the sink's first contact (an empty batch) reaches a node that reads version 2
        first = false;
        return { status: 204, headers: { 'X-Logrelay-Accepted': '0', 'X-Logrelay-Accept-Protocol': '1, 2' } };
      }
      if (req.headers['content-type'] === FRAMES) {
        refused++;
        return { status: refusal };
      }
      return oldSourceAnswer(req, body, messages);
    });
    const send = await sender(f, 'edge', port, '');
    // entries only once the first contact's 204 was heard: a batch posted before it (as NDJSON)
    // would be answered after it by the old node's 204, which puts the sink back on version 1
    await waitFor(() => send.records.find((r) => r.msg === 'Chain link protocol version changed' && r.protocol === 2), 'the sink on version 2 after the first contact');
    await feedWithin60s(send.child.stdin!, 300, 50, 20);
    await waitFor(() => messages.length >= 300, 'the 300 entries at the old source');
    t.true(refused >= 1, 'the sink posted frames after the first 204');
    t.deepEqual([...messages].sort(), numberedMessages(300), 'each entry once, none lost');
    const status = await waitFor(() => {
      const s = latestStatus(send, 'send');
      return s && Number(s['sinks.out.batches_sent']) >= 1 ? s : undefined;
    }, 'the sender status');
    t.is(status['sinks.out.dropped_batches'], 0);
    await waitFor(() => send.records.some((r) => r.level === 'info' && r.msg === 'Chain link peer does not read protocol version 2, sending NDJSON' && r.status === refusal), 'INFO: the peer does not read version 2');
  });
}

test.serial('http_chain: a source answering 413 to a large batch of frames gets it in halves, cut between frames; each entry once', async (t) => {
  t.timeout(60_000);
  const f = fleet(t);
  let tooLarge = 0;
  const messages: string[] = [];
  const types = new Set<string | undefined>();
  const port = await fakeSource(t, (req, body) => {
    types.add(req.headers['content-type']);
    if (body.length > 1500) {
      tooLarge++;
      return { status: 413 };
    }
    if (req.headers['content-type'] === FRAMES) {
      const reader = new FrameReader(body.length);
      reader.push(body, (fr) => messages.push(decodeEntryFrame(fr, undefined, 0, 'p')!.message));
      t.false(reader.pending, 'a half ends at the end of a frame');
    } else messages.push(...messagesOf(body));
    return { status: 204, headers: { 'X-Logrelay-Accepted': '0', 'X-Logrelay-Accept-Protocol': '1, 2' } };
  });
  // one batch of 100 entries (about 3,000 bytes of frames)
  const send = await sender(f, 'edge', port, '', 500);
  // frames once the answer to the first contact named version 2 (on a loaded machine the entries
  // could otherwise come first, as NDJSON)
  await waitFor(() => send.records.some((r) => r.msg === 'Chain link protocol version changed' && r.protocol === 2), 'the sink posts version 2');
  await feedWithin60s(send.child.stdin!, 100, 100, 0);
  await waitFor(() => messages.length >= 100, 'the 100 entries at the source');
  t.true(tooLarge >= 1, 'a batch was refused 413');
  t.true(types.has(FRAMES), 'as frames');
  t.deepEqual([...messages].sort(), numberedMessages(100));
});

/** POSTs `body` with `headers` to the http_chain source on `port`; the status and the answer's headers. */
function post(port: number, body: Buffer, headers: Record<string, string>): Promise<{ status: number; headers: IncomingMessage['headers'] }> {
  return new Promise((resolve, reject) => {
    const req = request({ host: '127.0.0.1', port, path: '/ingest', method: 'POST', headers: { 'Content-Length': body.length, ...headers } }, (res) => {
      res.resume();
      resolve({ status: res.statusCode ?? 0, headers: res.headers });
    });
    req.on('error', reject);
    req.end(body);
  });
}

/** Frames of `entries` as a version 2 sink writes them. */
function framesOf(entries: readonly { message: string; id?: string }[]): Buffer {
  const items = entries.map((e) => framedItem({ time: Date.UTC(2026, 0, 1), source: 'raw', ...e }, '', undefined));
  encodeFrames(items, 0, items.length, 0, 'p');
  const runs: Buffer[] = [];
  eachRun(PROTOCOL_V2, items, 0, items.length, (b) => runs.push(b));
  return Buffer.concat(runs);
}

const V1 = { 'Content-Type': 'application/x-ndjson', 'X-Logrelay-Protocol': '1', 'X-Logrelay-Node': 'old-edge' };
const V2 = { 'Content-Type': FRAMES, 'X-Logrelay-Protocol': '2', 'X-Logrelay-Node': 'new-edge' };

test.serial('http_chain source: NDJSON from an older sink is read and answered with the versions it reads; frames plain and gzip, their ids deduplicated; a cut frame, a frame body of another type, a frames bomb', async (t) => {
  t.timeout(60_000);
  const f = fleet(t);
  const port = await freePort();
  // with a dedup window: a copy of an entry (by the id its frame carries) is dropped
  const recv = await receiver(f, port, 'max_body_bytes = 65536\n', '[pipelines.flow.dedup]\nenabled = true\n');
  // an older sink: NDJSON, protocol 1, knows nothing of version 2
  const old = await post(port, Buffer.from(`${JSON.stringify({ source: 'old', message: 'from an older sink' })}\n`), V1);
  t.is(old.status, 204);
  t.is(old.headers['x-logrelay-accepted'], '1');
  t.is(old.headers['x-logrelay-accept-protocol'], '1, 2', 'the 204 names the versions the source reads');
  // frames, plain and gzip
  t.is((await post(port, framesOf([{ message: 'frame one', id: 'id-1' }, { message: 'frame two ✓' }]), V2)).status, 204);
  const again = await post(port, framesOf([{ message: 'frame one', id: 'id-1' }]), V2);
  t.is(again.status, 204);
  t.is(again.headers['x-logrelay-accepted'], '1', 'a copy is accepted (and dropped)');
  t.is((await post(port, gzipSync(framesOf([{ message: 'frame gzip' }])), { ...V2, 'Content-Encoding': 'gzip' })).status, 204);
  // a good frame and one cut short: the first taken, the rest a parse error
  const cut = framesOf([{ message: 'before the cut' }, { message: 'cut short' }]);
  const cutAnswer = await post(port, cut.subarray(0, cut.length - 3), V2);
  t.is(cutAnswer.status, 204);
  t.is(cutAnswer.headers['x-logrelay-accepted'], '1');
  // version 2 with another Content-Type, and a version this source does not know
  t.is((await post(port, framesOf([{ message: 'mislabelled' }]), { ...V2, 'Content-Type': 'application/x-ndjson' })).status, 415);
  t.is((await post(port, Buffer.from('x'), { ...V2, 'X-Logrelay-Protocol': '3' })).status, 400);
  // 16 MiB of frames that gzip to a few KiB: 413 before it is inflated whole
  const frame = framesOf([{ message: 'b'.repeat(1000) }]);
  const bomb = gzipSync(Buffer.concat(Array.from({ length: (16 * 1024 * 1024) / frame.length }, () => frame)), { level: 9 });
  t.true(bomb.length < 65536, `the bomb is ${bomb.length} bytes on the wire`);
  t.is((await post(port, bomb, { ...V2, 'Content-Encoding': 'gzip' })).status, 413);
  // a last entry: what was printed before it is all there is
  t.is((await post(port, Buffer.from(`${JSON.stringify({ source: 'old', message: 'the last' })}\n`), V1)).status, 204);
  await waitFor(() => recv.out.some((l) => l.includes('the last')), 'the last entry at the receiver');
  const got = parseReceived(recv.out).map((e) => [e.node, e.message]);
  t.deepEqual(got, [
    ['old-edge', 'from an older sink'],
    ['new-edge', 'frame one'], // once: its copy had the same id
    ['new-edge', 'frame two ✓'],
    ['new-edge', 'frame gzip'],
    ['new-edge', 'before the cut'],
    ['old-edge', 'the last'],
  ]);
  await waitFor(() => Number(latestStatus(recv, 'recv')?.['sources.in.parse_errors']) >= 2, 'parse_errors: the cut frame and the unknown version');
});
