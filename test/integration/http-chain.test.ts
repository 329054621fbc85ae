// Two real nodes linked by http_chain on 127.0.0.1: complete delivery, recovery from a receiver
// killed with SIGKILL, the sink's answer to a peer that refuses (413) or is busy (503), and the
// source's max_connections.

import { createServer, type IncomingMessage, request, type Server } from 'node:http';
import { connect, type Socket } from 'node:net';
import test from 'ava';
import {
  chainReceiverToml,
  chainSenderToml,
  chainSinkToml,
  chainSourceToml,
  duplicatesIn,
  feed,
  killReceiverMidStream,
  numberOf,
  QUICK_BACKOFF,
  RECEIVER_HEAD,
  relayAll,
} from '../helpers/chain.js';
import { freePort, nodeStarter, type RunningNode, tempDir, waitFor, waitReady, within } from '../helpers/node.js';
import { latestCounter, latestStatus } from '../helpers/status.js';

const tmp = tempDir('logrelay-http-chain-');
test.after.always(() => tmp.remove());

const running: RunningNode[] = [];
const servers: Server[] = [];
test.afterEach.always(async () => {
  for (const s of servers.splice(0)) s.close();
  await Promise.all(running.splice(0).map((n) => n.stop(5000)));
});

const start = nodeStarter(tmp, running);
const receiverToml = (port: number) => chainReceiverToml('http_chain', port);
/** Batches close after 100 ms. */
const senderSinkConfig = 'flush_interval_ms = 100';
const senderToml = (port: number, extra = '') => chainSenderToml('http_chain', port, 'edge-h', `${senderSinkConfig}\n${extra}`);

interface Answer {
  status: number;
  headers?: Record<string, string>;
}

/** A plain HTTP peer the test controls: answers each POST with `answer(n)` (n counts requests). */
async function fakePeer(answer: (n: number, req: IncomingMessage, body: string) => Answer) {
  let n = 0;
  const srv = createServer((req, res) => {
    // a peer of the entries' path only, as one from before node reports: those are not its business
    if (req.url?.endsWith('/report')) {
      req.resume();
      res.writeHead(404).end();
      return;
    }
    const chunks: Buffer[] = [];
    req.on('data', (c: Buffer) => chunks.push(c));
    req.on('end', () => {
      const a = answer(n++, req, Buffer.concat(chunks).toString());
      res.writeHead(a.status, a.headers ?? {});
      res.end();
    });
  });
  servers.push(srv);
  await new Promise<void>((resolve) => srv.listen(0, '127.0.0.1', resolve));
  return { port: (srv.address() as { port: number }).port, requests: () => n };
}

test.serial('100,000 numbered entries arrive complete through http_chain, with node set', async (t) => {
  // two starts (20 s each), the feed (60 s) and the delivery (45 s)
  t.timeout(180_000);
  const port = await freePort();
  const total = 100_000;
  const got = await relayAll(start, receiverToml(port), senderToml(port, 'on_full = "block"'), total);
  t.is(got.length, total);
  const seen = new Set(got.map(numberOf));
  t.is(seen.size, total, 'no entry missing or repeated');
  // up to four batches are out at once, so batches may overtake each other; a batch's entries stay in order
  const descents = got.filter((e, i) => i > 0 && numberOf(e) < numberOf(got[i - 1]!)).length;
  t.true(descents <= got.length / 100, `${descents} places where a later batch came first`);
  t.true(got.every((e) => e.node === 'edge-h' && e.source === 'stdin'));
});

test.serial('receiver killed with SIGKILL and restarted: the http_chain sink retries and every entry arrives', async (t) => {
  // two starts (20 s each), the first delivery (30 s), the failed attempts (20 s), the feed (60 s)
  // and the full delivery (45 s)
  t.timeout(240_000);
  const port = await freePort();
  const total = 40_000;
  const { a, b2, firstRun, seen } = await killReceiverMidStream(start, receiverToml(port), senderToml(port, 'on_full = "block"'), {
    total,
    firstBatch: 8_000,
    senderNoticed: (s) => Number(latestStatus(s, 'send')?.['sinks.link.reconnects'] ?? 0) > 0,
    noticeWhat: 'sender counts failed attempts',
  });
  t.true(firstRun < total, 'the receiver was killed mid-stream');
  const duplicates = duplicatesIn(seen);
  t.log(`first receiver got ${firstRun}, second ${b2.out.length}; duplicates: ${duplicates}`);
  for (let i = 0; i < total; i++) if (!seen.has(i)) t.fail(`entry ${i} missing`);
  const dropped = latestStatus(a, 'send')?.['sinks.link.dropped_batches'];
  t.is(typeof dropped, 'number', 'the sender reports dropped_batches');
  t.is(dropped, 0);
});

test.serial('a peer answering 413 makes the sink drop batches with an ERROR; a 503 peer is retried until it recovers', async (t) => {
  const refusing = await fakePeer(() => ({ status: 413 }));
  const bodies: string[] = [];
  const busy = await fakePeer((n, req, body): Answer => {
    // request 0 is the sink's first contact at start, an empty batch (before any entry)
    if (n === 0) return body === '' ? { status: 204, headers: { 'X-Logrelay-Accepted': '0' } } : { status: 500 };
    if (n < 4) return { status: 503, headers: { 'Retry-After': '1' } };
    t.is(req.headers['x-logrelay-protocol'], '1');
    t.is(req.headers['x-logrelay-node'], 'edge-h');
    t.is(req.headers['content-type'], 'application/x-ndjson');
    bodies.push(body);
    return { status: 204, headers: { 'X-Logrelay-Accepted': String(body.split('\n').length - 1) } };
  });
  const toml = `${senderToml(refusing.port)}
${chainSinkToml('busy', 'http_chain', busy.port, 'edge-h', `${senderSinkConfig}\n${QUICK_BACKOFF}`)}`;
  const a = start('send3', toml, ['--logging.level=debug'], true);
  await waitReady(a, 'sender');
  await feed(a.child.stdin!, 50, 50, 0);
  await waitFor(() => bodies.join('').split('\n').length - 1 >= 50, 'busy peer finally gets all 50 entries', 20_000);
  t.true(busy.requests() >= 4, 'the 503s were retried');
  const lines = bodies.join('').trim().split('\n');
  t.is(lines.length, 50);
  t.like(JSON.parse(lines[0]!), { source: 'stdin', message: 'entry 000000' });
  t.regex((JSON.parse(lines[0]!) as { time: string }).time, /^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{3}Z$/);
  const status = await waitFor(() => {
    const s = latestStatus(a, 'send');
    return s && Number(s['sinks.link.dropped_batches']) >= 1 && Number(s['sinks.busy.batches_sent']) >= 1 ? s : undefined;
  }, 'dropped_batches on the 413 sink, batches_sent on the other');
  t.is(status['sinks.busy.dropped_batches'], 0);
  t.true(Number(status['sinks.busy.reconnects']) >= 3);
  await waitFor(() => a.records.some((r) => r.level === 'error' && r.plugin === 'link' && r.msg === 'Chain batch rejected by peer, dropped' && r.status === 413), 'ERROR Chain batch rejected by peer');
});

test.serial('an idle link posts a write at once; while a request is out the next batch fills to max_batch_count (a full one goes at once) and the rest goes when the link is idle again', async (t) => {
  /** entries of each batch posted, in order (not the empty first contact, not node reports) */
  const sizes: number[] = [];
  const held: (() => void)[] = [];
  let holding = true;
  const srv = createServer((req, res) => {
    const chunks: Buffer[] = [];
    req.on('data', (c: Buffer) => chunks.push(c));
    req.on('end', () => {
      const n = Buffer.concat(chunks).toString().split('\n').filter((l) => l !== '').length;
      const answer = () => {
        res.writeHead(204, { 'X-Logrelay-Accepted': String(n) });
        res.end();
      };
      if (req.url !== '/ingest' || n === 0) return answer();
      sizes.push(n);
      // the answers wait until the test has seen what was posted meanwhile
      if (holding) held.push(answer);
      else answer();
    });
  });
  servers.push(srv);
  await new Promise<void>((resolve) => srv.listen(0, '127.0.0.1', resolve));
  const port = (srv.address() as { port: number }).port;
  // flush_interval_ms far beyond the test: every batch below goes by count or by the link's state
  const a = start('send-fill', chainSenderToml('http_chain', port, 'edge-h', 'max_batch_count = 50\nflush_interval_ms = 600000\n'), [], true);
  await waitReady(a, 'sender');
  a.child.stdin!.write('first\n');
  await waitFor(() => sizes.length === 1, 'the first entry posted at once on an idle link');
  for (let i = 0; i < 12; i++) {
    a.child.stdin!.write(Array.from({ length: 10 }, (_, k) => `line ${i * 10 + k}\n`).join(''));
    await new Promise((resolve) => setTimeout(resolve, 20));
  }
  await waitFor(() => sizes.length === 3, 'two full batches of 50 posted while the first request is out');
  holding = false;
  for (const answer of held.splice(0)) answer();
  await waitFor(() => sizes.reduce((sum, n) => sum + n, 0) === 121, 'the last 20 posted once every answer is in');
  t.deepEqual(sizes, [1, 50, 50, 20], 'one, two full batches, then the rest: never a write of ten on its own while a request was out');
});

test.serial('a body that arrives in pieces is read line by line across them: a character split between two, CR LF, empty lines and a last line without a newline', async (t) => {
  t.timeout(60_000);
  const port = await freePort();
  const b = start('recv-pieces', receiverToml(port));
  await waitReady(b, 'receiver');
  const line = (i: number, message: string) => JSON.stringify({ time: '2026-11-25T10:00:00.000Z', source: 's', message, id: `pieces-${i}` });
  const messages = ['plain', 'thrée 😀 and €', 'quoted "x" \\ back', 'x'.repeat(70_000), 'last, no newline'];
  const body = Buffer.from(`${line(0, messages[0]!)}\r\n\n${line(1, messages[1]!)}\n${line(2, messages[2]!)}\r\n${line(3, messages[3]!)}\n\n${line(4, messages[4]!)}`);
  // cut inside the 4-byte emoji, inside the € and right after a \r: each piece is written on its own, 30 ms apart
  const emoji = body.indexOf(Buffer.from('😀'));
  const euro = body.indexOf(Buffer.from('€'));
  const cr = body.indexOf(13);
  const cuts = [cr + 1, emoji + 2, euro + 1, emoji + 200, body.length - 10].sort((x, y) => x - y);
  const { request } = await import('node:http');
  const status = await new Promise<number>((resolve, reject) => {
    const req = request({ host: '127.0.0.1', port, path: '/ingest', method: 'POST', headers: { 'x-logrelay-protocol': '1', 'Content-Length': body.length } }, (res) => {
      res.resume();
      resolve(res.statusCode ?? 0);
    });
    req.on('error', reject);
    req.setNoDelay(true);
    let from = 0;
    const next = (k: number) => {
      const to = k < cuts.length ? cuts[k]! : body.length;
      req.write(body.subarray(from, to));
      from = to;
      if (k < cuts.length) setTimeout(() => next(k + 1), 30);
      else req.end();
    };
    next(0);
  });
  t.is(status, 204);
  await waitFor(() => b.out.length >= messages.length, 'every line at the receiver', 20_000);
  t.deepEqual(
    b.out.map((l) => (JSON.parse(l) as { message: string }).message),
    messages,
  );
  t.is(latestStatus(b, 'recv')?.['sources.link.parse_errors'] ?? 0, 0);
});

/** A raw connection to 127.0.0.1:`port`; resolves once connected, or with undefined when refused. */
function openSocket(port: number): Promise<Socket | undefined> {
  return new Promise((resolve) => {
    const s = connect(port, '127.0.0.1', () => resolve(s));
    s.on('error', () => resolve(undefined));
  });
}

/** POSTs one chain line to the source on `port`: the status. */
function postLine(port: number, message: string): Promise<number> {
  const body = `${JSON.stringify({ time: '2026-11-25T10:00:00.000Z', source: 's', message })}\n`;
  return within(
    new Promise<number>((resolve, reject) => {
      const req = request({ host: '127.0.0.1', port, path: '/ingest', method: 'POST', agent: false, headers: { 'x-logrelay-protocol': '1', 'Content-Length': Buffer.byteLength(body) } }, (res) => {
        res.resume();
        resolve(res.statusCode ?? 0);
      });
      req.on('error', reject);
      req.end(body);
    }),
    10_000,
    () => new Error('no answer to the POST within 10 s'),
  );
}

test.serial('connections beyond max_connections are refused (rejected_conns), as at the otlp source; a freed slot takes the next', async (t) => {
  t.timeout(60_000);
  const port = await freePort();
  const b = start('recv-limited', `${RECEIVER_HEAD}${chainSourceToml('link', 'http_chain', port, 'max_connections = 2\n')}[[pipelines.plugin_sinks]]\ntype = "stdout"\n`, ['--logging.level=debug']);
  await waitReady(b, 'receiver');
  const held = [await openSocket(port), await openSocket(port)];
  t.teardown(() => held.forEach((s) => s?.destroy()));
  t.truthy(held[0] && held[1], 'the first two connections are taken');
  await waitFor(() => latestCounter(b, 'recv', 'sources.link.active_connections') === 2, 'two connections held');
  const third = await openSocket(port);
  if (third) {
    // taken by the kernel, closed by the source at once
    await within(new Promise((resolve) => third.once('close', resolve)), 5000, () => {
      third.destroy();
      return new Error('the third connection: still open after 5 s');
    });
  }
  await waitFor(() => (latestCounter(b, 'recv', 'sources.link.rejected_conns') ?? 0) >= 1, 'rejected_conns counted');
  t.is(latestCounter(b, 'recv', 'sources.link.active_connections'), 2, 'the refused connection never became a session');
  for (const s of held) s?.destroy();
  await waitFor(() => latestCounter(b, 'recv', 'sources.link.active_connections') === 0, 'the held connections gone');
  t.is(await postLine(port, 'after the slot freed'), 204);
  await waitFor(() => b.out.some((l) => l.includes('after the slot freed')), 'the entry of a freed slot delivered');
});
