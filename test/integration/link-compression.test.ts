// Link compression (issue 40, acceptance 4): gzip through tcp_chain and http_chain, with TLS and
// without, entries identical at the far end and the byte counters equal to what the far end read;
// a v1 peer that knows no `offer` (either side) gets plain lines; an http_chain gzip bomb gets 413,
// an unknown Content-Encoding 415; zstd runs where the runtime has it and fails the build elsewhere.

import { connect as netConnect, type AddressInfo } from 'node:net';
import { request } from 'node:http';
import { join } from 'node:path';
import { gzipSync } from 'node:zlib';
import test, { type ExecutionContext } from 'ava';
import { hasZstd } from '../../src/chain/compression.js';
import { type ChainLink, chainSinkToml, chainSourceToml, feedWithin60s, parseReceived, QUICK_BACKOFF, RECEIVER_HEAD, SENDER_HEAD, tlsBlock } from '../helpers/chain.js';
import { freePort, nodeStarter, ownedTempDir, type RunningNode, spawnOwnedNode, waitFor, waitReady } from '../helpers/node.js';
import { makePki } from '../helpers/pki.js';
import { oldChainSource } from '../helpers/reports.js';
import { latestStatus } from '../helpers/status.js';

function fleet(t: ExecutionContext) {
  const dir = ownedTempDir(t, 'logrelay-compress-');
  const running: RunningNode[] = [];
  t.teardown(async () => {
    for (const n of running) await n.stop();
  });
  return { dir, start: nodeStarter(dir, running) };
}

/** Lines with repetition (as logs have), UTF-8 and characters JSON escapes. */
const lineOf = (i: number): string => `entry ${String(i).padStart(6, '0')} GET /api/v1/orders?id=${i % 97} 200 "ok" täglich ✓ tab\there`;

async function transfer(t: ExecutionContext, link: ChainLink, compression: string, tls: boolean): Promise<void> {
  const f = fleet(t);
  const pki = tls ? makePki(join(f.dir.path, 'pki'), ['relay', 'edge-01']) : undefined;
  const port = await freePort();
  const serverTls = pki ? tlsBlock('pipelines.plugin_sources.config', { cert_file: pki.cert('relay'), key_file: pki.key('relay'), client_ca_file: pki.ca }) : '';
  const clientTls = pki ? tlsBlock('pipelines.plugin_sinks.config', { ca_file: pki.ca, cert_file: pki.cert('edge-01'), key_file: pki.key('edge-01'), server_name: 'relay' }) : '';
  const recv = f.start('recv', `${RECEIVER_HEAD}${chainSourceToml('in', link, port, serverTls)}[[pipelines.plugin_sinks]]\ntype = "stdout"\n[pipelines.plugin_sinks.config]\nbuffer_size = 5000\non_full = "block"\n`, ['--logging.level=debug']);
  await waitReady(recv, 'receiver');
  const send = f.start('send', `${SENDER_HEAD}${chainSinkToml('out', link, port, 'edge-01', `${QUICK_BACKOFF}compression = "${compression}"\n${clientTls}`)}`, ['--logging.level=debug'], true);
  await waitReady(send, 'sender');
  const total = 20_000;
  let text = '';
  for (let i = 0; i < total; i++) text += `${lineOf(i)}\n`;
  await new Promise<void>((resolve, reject) => send.child.stdin!.write(text, (err) => (err ? reject(err) : resolve())));
  await waitFor(() => recv.out.length >= total, `all ${total} entries at the receiver`, 60_000);
  // http_chain posts several batches at once: they may arrive in another order
  const got = new Set(parseReceived(recv.out).map((e) => e.message));
  t.is(got.size, total);
  for (let i = 0; i < total; i++) if (!got.has(lineOf(i))) t.fail(`entry ${i} missing or changed`);
  const counters = await waitFor(() => {
    const s = latestStatus(send, 'send');
    const r = latestStatus(recv, 'recv');
    return s && r && s['sinks.out.total_processed'] === total && (link === 'http_chain' || s['sinks.out.unacked'] === 0) && r['sources.in.bytes_received'] === s['sinks.out.bytes_sent'] ? { s, r } : undefined;
  }, 'the sender bytes_sent equal to what the receiver read off the link');
  const sent = Number(counters.s['sinks.out.bytes_sent']);
  const raw = Number(counters.s['sinks.out.bytes_raw']);
  t.log(`${link} ${compression}${tls ? ' tls' : ''}: ${raw} raw bytes, ${sent} on the wire (${(sent / raw).toFixed(3)})`);
  t.true(sent < raw / 3, `compressed: ${sent} of ${raw}`);
  t.false(send.records.some((r) => r.msg === 'Chain link compression declined, sending plain'));
}

for (const link of ['tcp_chain', 'http_chain'] as const) {
  for (const tls of [false, true]) {
    test.serial(`${link} gzip${tls ? ' over TLS' : ''}: entries identical at the far end, bytes_sent equal to the bytes the source read`, async (t) => {
      t.timeout(150_000);
      await transfer(t, link, 'gzip', tls);
    });
  }
}

if (hasZstd()) {
  for (const link of ['tcp_chain', 'http_chain'] as const) {
    test.serial(`${link} zstd (this runtime has it): entries identical at the far end`, async (t) => {
      t.timeout(150_000);
      await transfer(t, link, 'zstd', false);
    });
  }
} else {
  test.serial(`zstd on a runtime without it (${process.version}): check fails naming the key and the runtime version`, async (t) => {
    const dir = ownedTempDir(t);
    for (const link of ['tcp_chain', 'http_chain'] as const) {
      const file = dir.file(`${link}.toml`, `${SENDER_HEAD}${chainSinkToml('out', link, 7000, 'edge', 'compression = "zstd"\n')}`);
      const node = spawnOwnedNode(t, ['check', '-c', file]);
      t.is((await node.finish('check')).code, 78);
      t.regex(node.errText.join('\n'), new RegExp(`failed to create sink out: compression: .*${process.version.replace(/\./g, '\\.')}`));
    }
  });
}

test.serial('a new tcp_chain sink with gzip against a source that knows no offer: plain lines, INFO once per connection', async (t) => {
  const f = fleet(t);
  const old = await oldChainSource();
  t.teardown(() => old.close());
  const send = f.start('send', `${SENDER_HEAD}${chainSinkToml('out', 'tcp_chain', old.port, 'edge', `${QUICK_BACKOFF}compression = "gzip"\n`)}`, ['--logging.level=debug'], true);
  await waitReady(send, 'sender');
  await feedWithin60s(send.child.stdin!, 100, 100, 0);
  await waitFor(() => old.lines.length >= 100, 'the 100 entries at the old source');
  t.regex(old.hellos[0]!, /"offer":\{"compression":\["gzip"\]/);
  t.true(old.lines.every((l) => l.startsWith('{')), 'plain JSON lines');
  // the service log comes through the primary: wait for the line, and for a status report after it
  await waitFor(() => send.records.some((r) => r.msg === 'Chain link compression declined, sending plain'), 'INFO Chain link compression declined, sending plain');
  const seen = send.records.length;
  await waitFor(() => send.records.slice(seen).some((r) => r.msg === 'status report'), 'a later status report');
  const declined = send.records.filter((r) => r.msg === 'Chain link compression declined, sending plain');
  t.is(declined.length, 1, 'said once for the connection');
  t.is(declined[0]!.level, 'info');
});

/** A client of protocol v1 as nodes before compression speak it; resolves with what the source answered to its hello. */
async function v1Sink(port: number, hello: string, entries: number): Promise<string[]> {
  const socket = netConnect({ host: '127.0.0.1', port });
  socket.setEncoding('utf8');
  const got: string[] = [];
  let rest = '';
  socket.on('data', (chunk: string) => {
    rest += chunk;
    for (let nl = rest.indexOf('\n'); nl >= 0; nl = rest.indexOf('\n')) {
      got.push(rest.slice(0, nl));
      rest = rest.slice(nl + 1);
    }
  });
  socket.on('error', () => undefined);
  await new Promise<void>((resolve) => socket.once('connect', resolve));
  socket.write(`${hello}\n`);
  await waitFor(() => got.length > 0, 'the answer to the hello');
  let text = '';
  for (let i = 0; i < entries; i++) text += `${JSON.stringify({ time: '2026-01-01T00:00:00Z', source: 'old', message: `old ${i}` })}\n`;
  socket.write(text);
  if (entries > 0) await waitFor(() => got.some((l) => l === `{"ack":${entries}}`), `ack of the ${entries} entries`);
  socket.destroy();
  return got;
}

test.serial('an old sink (no offer) and one offering what the source does not know get {"ok":1} and are read as plain lines', async (t) => {
  const f = fleet(t);
  const port = await freePort();
  const recv = f.start('recv', `${RECEIVER_HEAD}${chainSourceToml('in', 'tcp_chain', port)}[[pipelines.plugin_sinks]]\ntype = "stdout"\n`, ['--logging.level=debug']);
  await waitReady(recv, 'receiver');
  const plain = await v1Sink(port, '{"logrelay":1,"node":"old"}', 10);
  t.is(plain[0], '{"ok":1}');
  const unknown = await v1Sink(port, '{"logrelay":1,"node":"odd","offer":{"teleport":["yes"],"compression":["lz4"]}}', 10);
  t.is(unknown[0], '{"ok":1}', 'offered features it does not know are ignored');
  const gzip = await v1Sink(port, '{"logrelay":1,"node":"new","offer":{"compression":["brotli","gzip"]}}', 0);
  t.is(gzip[0], '{"ok":1,"accept":{"compression":"gzip"}}', 'the first offered codec it supports');
  await waitFor(() => recv.out.length >= 20, 'the 20 plain entries at the receiver');
  t.deepEqual(new Set(parseReceived(recv.out).map((e) => e.node)), new Set(['old', 'odd']));
});

/** POSTs `body` with `headers` to the http_chain source on `port`; the status. */
function post(port: number, body: Buffer, headers: Record<string, string>): Promise<number> {
  return new Promise((resolve, reject) => {
    const req = request({ host: '127.0.0.1', port, path: '/ingest', method: 'POST', headers: { 'Content-Type': 'application/x-ndjson', 'X-Logrelay-Protocol': '1', 'Content-Length': body.length, ...headers } }, (res) => {
      res.resume();
      resolve(res.statusCode ?? 0);
    });
    req.on('error', reject);
    req.end(body);
  });
}

test.serial('http_chain source: a gzip bomb gets 413 without being inflated whole, an unknown Content-Encoding 415, a good gzip body 204', async (t) => {
  const f = fleet(t);
  const port = await freePort();
  const recv = f.start('recv', `${RECEIVER_HEAD}${chainSourceToml('in', 'http_chain', port, 'max_body_bytes = 1048576\n')}[[pipelines.plugin_sinks]]\ntype = "stdout"\n`, ['--logging.level=debug']);
  await waitReady(recv, 'receiver');
  // 64 MiB of one repeated line compress to well under max_body_bytes as received
  const line = Buffer.from(`${JSON.stringify({ source: 'bomb', message: 'x'.repeat(200) })}\n`);
  const bomb = gzipSync(Buffer.alloc(64 * 1024 * 1024, line.toString()), { level: 9 });
  t.true(bomb.length < 1048576, `the bomb is ${bomb.length} bytes on the wire`);
  t.is(await post(port, bomb, { 'Content-Encoding': 'gzip' }), 413);
  t.is(await post(port, Buffer.from('whatever'), { 'Content-Encoding': 'br' }), 415);
  const good = gzipSync(Buffer.from(`${JSON.stringify({ source: 'ok', message: 'hello' })}\n`));
  t.is(await post(port, good, { 'Content-Encoding': 'gzip' }), 204);
  await waitFor(() => recv.out.some((l) => l.includes('"hello"')), 'the good entry at the receiver');
  // the bomb's bytes as received are counted (it was read whole: it fit max_body_bytes on the wire)
  await waitFor(() => Number(latestStatus(recv, 'recv')?.['sources.in.bytes_received']) >= bomb.length, 'bytes_received counts the bomb as it came');
  t.false(parseReceived(recv.out).some((e) => e.source === 'bomb'), 'nothing of the bomb was emitted');
});

test.serial('a new http_chain sink with gzip against a source that predates compression: plain bodies, INFO once', async (t) => {
  const f = fleet(t);
  const encodings: (string | undefined)[] = [];
  const bodies: string[] = [];
  // an http_chain source as releases before compression answer: 204 with the count, nothing more
  const server = (await import('node:http')).createServer((req, res) => {
    encodings.push(req.headers['content-encoding']);
    const chunks: Buffer[] = [];
    req.on('data', (c: Buffer) => chunks.push(c));
    req.on('end', () => {
      const text = Buffer.concat(chunks).toString('utf8');
      if (text) bodies.push(text);
      res.writeHead(204, { 'X-Logrelay-Accepted': String(text.split('\n').filter(Boolean).length) });
      res.end();
    });
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  t.teardown(() => {
    server.close();
  });
  const port = (server.address() as AddressInfo).port;
  const send = f.start('send', `${SENDER_HEAD}${chainSinkToml('out', 'http_chain', port, 'edge', `${QUICK_BACKOFF}compression = "gzip"\nflush_interval_ms = 50\n`)}`, ['--logging.level=debug'], true);
  await waitReady(send, 'sender');
  await feedWithin60s(send.child.stdin!, 100, 20, 20);
  await waitFor(() => bodies.join('').split('\n').filter(Boolean).length >= 100, 'the 100 entries at the old source');
  t.deepEqual(new Set(encodings), new Set([undefined]), 'no body was compressed');
  t.true(bodies.every((b) => b.startsWith('{')), 'plain NDJSON');
  await waitFor(() => send.records.some((r) => r.msg === 'Chain link compression declined, sending plain'), 'INFO Chain link compression declined, sending plain');
  t.is(send.records.filter((r) => r.msg === 'Chain link compression declined, sending plain').length, 1, 'said once');
});
