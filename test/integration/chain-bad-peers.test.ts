// Bad peers against real chain sources: each gets its contract answer (§9), the counters in the
// status report rise, and a well-behaved link on another connection keeps flowing meanwhile.

import { randomBytes } from 'node:crypto';
import { type ClientRequest, request } from 'node:http';
import { connect, type Socket } from 'node:net';
import test from 'ava';
import { chainSourceToml, RECEIVER_HEAD } from '../helpers/chain.js';
import { freePort, type RunningNode, sleep, spawnNode, tempDir, waitFor, within } from '../helpers/node.js';
import { latestStatus } from '../helpers/status.js';

const tmp = tempDir('logrelay-bad-peers-');
let node: RunningNode | undefined;
test.after.always(async () => {
  await node?.stop(5000);
  tmp.remove();
});

interface Peer {
  readonly socket: Socket;
  readonly lines: string[];
  /** Resolves once the source closed the connection; fails naming `what` if it is open after 10 s. */
  closedBy(what: string): Promise<void>;
  send(text: string): void;
  waitLine(match: (l: string) => boolean, what: string): Promise<string>;
}

async function dial(port: number): Promise<Peer> {
  const socket = connect({ host: '127.0.0.1', port });
  const lines: string[] = [];
  let rest = '';
  socket.setEncoding('utf8');
  socket.on('data', (chunk: string) => {
    rest += chunk;
    for (let i = rest.indexOf('\n'); i >= 0; i = rest.indexOf('\n')) {
      lines.push(rest.slice(0, i));
      rest = rest.slice(i + 1);
    }
  });
  socket.on('error', () => {});
  const closed = new Promise<void>((resolve) => socket.once('close', () => resolve()));
  await new Promise<void>((resolve, reject) => {
    socket.once('connect', resolve);
    socket.once('error', reject);
  });
  return {
    socket,
    lines,
    closedBy: (what) =>
      within(closed, 10_000, () => {
        socket.destroy();
        return new Error(`${what}: the connection is still open after 10 s (lines ${JSON.stringify(lines)})`);
      }),
    send: (text) => void socket.write(text),
    waitLine: (match, what) => waitFor(() => lines.find(match), what, 10_000),
  };
}

interface Reply {
  status: number;
  headers: Record<string, string | string[] | undefined>;
  body: string;
}

/**
 * One request on a fresh connection: the answer once it has come (its body as far as it got), or
 * a rejection when the request fails before any answer or none comes within 10 s.
 */
function httpCall(port: number, method: string, path: string, headers: Record<string, string | number>, body?: string | Buffer): Promise<Reply> {
  let req: ClientRequest | undefined;
  const reply = new Promise<Reply>((resolve, reject) => {
    let answered = false;
    req = request({ host: '127.0.0.1', port, method, path, headers, agent: false }, (res) => {
      answered = true;
      let text = '';
      const done = () => resolve({ status: res.statusCode ?? 0, headers: res.headers, body: text });
      res.setEncoding('utf8');
      res.on('data', (c: string) => (text += c));
      res.on('end', done);
      res.on('error', done);
      res.on('close', done);
    });
    // The server may answer and close before the whole (oversized) body is written: the write
    // then fails (EPIPE, reset), and that error is no failure of the call once the answer is in.
    req.on('error', (err) => {
      if (!answered) reject(err);
    });
    req.end(body);
  });
  return within(reply, 10_000, () => {
    req?.destroy();
    return new Error(`${method} ${path} on ${port}: no answer within 10 s`);
  });
}

const entry = (message: string) => `${JSON.stringify({ time: new Date().toISOString(), source: 'peer', message })}\n`;
const HELLO = '{"logrelay":1,"node":"good"}\n';
const PROTO = { 'X-Logrelay-Protocol': '1', 'X-Logrelay-Node': 'web', 'Content-Type': 'application/x-ndjson' };

test.serial('bad peers get their contract answers, counters rise, valid traffic is unaffected', async (t) => {
  const [tcpPort, tcp1Port, httpPort, stallPort, deadPort] = await Promise.all([freePort(), freePort(), freePort(), freePort(), freePort()]);
  const toml = `${RECEIVER_HEAD}${chainSourceToml('tcp', 'tcp_chain', tcpPort, 'hello_timeout_ms = 500\n')}${chainSourceToml(
    'tcp1',
    'tcp_chain',
    tcp1Port,
    'max_connections = 1\n',
  )}${chainSourceToml('http', 'http_chain', httpPort, 'max_body_bytes = 65536\n')}[[pipelines.plugin_sinks]]
type = "stdout"

[[pipelines]]
name = "stall"
${chainSourceToml('stalled', 'http_chain', stallPort)}[[pipelines.plugin_sinks]]
id = "nowhere"
type = "tcp_chain"
[pipelines.plugin_sinks.config]
host = "127.0.0.1"
port = ${deadPort}
buffer_size = 10
on_full = "block"
`;
  node = spawnNode(['-c', tmp.file('bad.toml', toml), '--logging.level=debug']);
  await waitFor(() => node!.records.filter((r) => r.msg === 'Starting pipeline').length === 2, 'both pipelines started');

  // A well-behaved link that stays open throughout, with garbage lines between valid ones.
  const good = await dial(tcpPort);
  good.send(HELLO);
  await good.waitLine((l) => l === '{"ok":1}', 'ok to a valid hello');
  good.send(`${entry('good-0')}garbage\n${entry('good-1')}[1,2]\n{"broken"\n${entry('good-2')}`);
  await good.waitLine((l) => l === '{"ack":3}', 'ack of the 3 valid entries (garbage skipped)');
  let goodSent = 3;
  const sendGood = () => good.send(entry(`good-${goodSent++}`));

  // No hello within hello_timeout_ms.
  const silent = await dial(tcpPort);
  await silent.closedBy('no hello');
  t.regex(silent.lines[0] ?? '', /^\{"error":".*hello.*"\}$/);
  sendGood();

  // Another protocol version.
  const v99 = await dial(tcpPort);
  v99.send('{"logrelay":99,"node":"future"}\n');
  await v99.closedBy('protocol version 99');
  t.regex(v99.lines[0] ?? '', /^\{"error":".*version.*"\}$/);
  t.false(v99.lines.includes('{"ok":1}'));
  sendGood();

  // Random bytes instead of a hello.
  const noise = await dial(tcpPort);
  noise.send(Buffer.concat([Buffer.from([0xff, 0x00, 0x7b]), randomBytes(8192), Buffer.from('\n')]) as unknown as string);
  await noise.closedBy('random bytes');
  t.regex(noise.lines[0] ?? '', /^\{"error":/);
  sendGood();

  // A 2 MiB line after a valid hello ends the connection.
  const huge = await dial(tcpPort);
  huge.send(HELLO);
  await huge.waitLine((l) => l === '{"ok":1}', 'ok before the huge line');
  huge.socket.write(`${entry('before-huge')}{"message":"${'x'.repeat(2 * 1024 * 1024)}"}\n`);
  await huge.closedBy('a 2 MiB line');
  t.true(huge.lines.some((l) => l.startsWith('{"error":') && l.includes('max_line_bytes')));
  sendGood();

  // max_connections = 1: the second connection is refused.
  const first = await dial(tcp1Port);
  first.send('{"logrelay":1,"node":"one"}\n');
  await first.waitLine((l) => l === '{"ok":1}', 'first connection accepted');
  const second = await dial(tcp1Port);
  await second.closedBy('a connection past max_connections');
  t.regex(second.lines[0] ?? '', /^\{"error":"too many connections"\}$/);
  first.socket.destroy();

  // HTTP: protocol header missing or another version, oversized body, GET, bad lines.
  const noHeader = await httpCall(httpPort, 'POST', '/ingest', { 'Content-Type': 'application/x-ndjson' }, entry('h'));
  t.is(noHeader.status, 400);
  const wrongVersion = await httpCall(httpPort, 'POST', '/ingest', { ...PROTO, 'X-Logrelay-Protocol': '99' }, entry('h'));
  t.is(wrongVersion.status, 400);
  const big = await httpCall(httpPort, 'POST', '/ingest', PROTO, entry('y'.repeat(100_000)));
  t.is(big.status, 413);
  const get = await httpCall(httpPort, 'GET', '/ingest', {});
  t.is(get.status, 405);
  t.is(get.headers.allow, 'POST');
  sendGood();
  const mixed = await httpCall(httpPort, 'POST', '/ingest', PROTO, `${entry('web-0')}not json\n${entry('web-1')}`);
  t.is(mixed.status, 204);
  t.is(mixed.headers['x-logrelay-accepted'], '2');

  // A saturated pipeline answers 503 with Retry-After. Entries that cannot be delivered are not
  // acknowledged (DESIGN.md §15): requests whose entries were taken get no 204 (their calls give
  // up after 10 s, as a sink's request_timeout_ms would); once the sink is full, the next are refused.
  const unanswered: Promise<number | string>[] = [];
  let busy: Reply | undefined;
  for (let i = 0; i < 20 && !busy; i++) {
    const call = httpCall(stallPort, 'POST', '/ingest', PROTO, entry('stall').repeat(50));
    const answered = await Promise.race([call.then((r) => r, () => undefined), sleep(1000).then(() => undefined)]);
    if (answered) {
      t.is(answered.status, 503, 'a stalled pipeline answers only with a refusal');
      busy = answered;
    } else {
      unanswered.push(call.then((r) => r.status, () => 'no answer'));
    }
  }
  t.is(busy?.status, 503);
  t.truthy(busy?.headers['retry-after']);
  t.true(unanswered.length > 0);
  for (const status of await Promise.all(unanswered)) t.is(status, 'no answer', 'entries stuck behind a dead link are never acknowledged');

  // The good link was never disturbed: everything it sent arrived, stamped with its node.
  sendGood();
  await good.waitLine((l) => l === `{"ack":${goodSent}}`, `ack of all ${goodSent} good entries`);
  const out = () => node!.out.filter((l) => l.startsWith('{')).map((l) => JSON.parse(l) as { node?: string; message: string });
  await waitFor(() => out().filter((e) => e.message.startsWith('good-')).length === goodSent, 'all good entries on stdout');
  t.true(out().filter((e) => e.message.startsWith('good-')).every((e) => e.node === 'good'));
  t.deepEqual(
    out()
      .filter((e) => e.message.startsWith('web-'))
      .map((e) => [e.node, e.message]),
    [
      ['web', 'web-0'],
      ['web', 'web-1'],
    ],
  );
  t.true(out().some((e) => e.message === 'before-huge'), 'entries before the over-long line were kept');
  good.socket.destroy();

  const status = await waitFor(() => {
    const s = latestStatus(node!, 'recv');
    return s &&
      Number(s['sources.tcp.parse_errors']) >= 7 &&
      Number(s['sources.tcp1.rejected_conns']) >= 1 &&
      Number(s['sources.http.parse_errors']) >= 3 &&
      Number(s['sources.http.total_requests']) >= 5
      ? s
      : undefined;
  }, 'status report shows the counters risen');
  // 3 garbage lines, no hello, version 99, random bytes, the 2 MiB line
  t.is(status['sources.tcp.parse_errors'], 7);
  t.is(status['sources.tcp1.rejected_conns'], 1);
  // missing header, version 99, one bad line
  t.is(status['sources.http.parse_errors'], 3);
});

test.serial('a dedup receiver drops a copy by the id its line ends with, before decoding it: counted and acknowledged like any duplicate', async (t) => {
  const [tcpPort, httpPort] = await Promise.all([freePort(), freePort()]);
  const toml = `${RECEIVER_HEAD}[pipelines.flow.dedup]
enabled = true
${chainSourceToml('tcp', 'tcp_chain', tcpPort)}${chainSourceToml('http', 'http_chain', httpPort)}[[pipelines.plugin_sinks]]
type = "stdout"
`;
  const dedupNode = spawnNode(['-c', tmp.file('dedup.toml', toml), '--logging.level=debug']);
  t.teardown(() => dedupNode.stop(5000));
  await waitFor(() => dedupNode.records.some((r) => r.msg === 'Starting pipeline'), 'pipeline started');
  const time = new Date().toISOString();
  const line = (message: string, id: string) => `${JSON.stringify({ time, source: 'peer', message, id })}\n`;

  // a copy within one body is caught by the window as the entries pass it
  const first = await httpCall(httpPort, 'POST', '/ingest', PROTO, `${line('m1', 'a')}${line('m2', 'b')}${line('m1', 'a')}`);
  t.is(first.status, 204);
  t.is(first.headers['x-logrelay-accepted'], '3');
  const second = await httpCall(
    httpPort,
    'POST',
    '/ingest',
    PROTO,
    [
      line('m1', 'a'), // copies the window holds: dropped before their decode
      line('m2', 'b'),
      `{"time":"${time}","source":"peer","message":"m3","fields":{"k":1},"id":"c"}\n`, // new, general form
      `{"time":"${time}","source":"peer","message":"m1","id":"\\u0061"}\n`, // id "a" escaped: found once decoded
      `{"time":"${time}","source":"peer","message":"x\\",\\"id\\":\\"a"}\n`, // no id: the text only looks like one
      'not json\n',
    ].join(''),
  );
  t.is(second.status, 204);
  t.is(second.headers['x-logrelay-accepted'], '5');

  const link = await dial(tcpPort);
  link.send(HELLO);
  await link.waitLine((l) => l === '{"ok":1}', 'ok to the hello');
  link.send(`${line('m1', 'a')}${line('m4', 'd')}${line('m4', 'd')}${line('m5', 'e')}`);
  // a copy dropped before its decode is acknowledged with the entries around it
  await link.waitLine((l) => l === '{"ack":4}', 'ack of all 4 lines, copies included');
  link.socket.destroy();

  const out = () => dedupNode.out.filter((l) => l.startsWith('{')).map((l) => (JSON.parse(l) as { message: string }).message);
  await waitFor(() => out().length >= 6, 'the unique entries on stdout');
  const status = await waitFor(() => {
    const s = latestStatus(dedupNode, 'recv');
    return s && s['flow.total_processed'] === 12 ? s : undefined;
  }, 'status report with every entry processed');
  t.deepEqual(out().sort(), ['m1', 'm2', 'm3', 'm4', 'm5', 'x","id":"a']);
  t.is(status['flow.duplicates_dropped'], 6);
  t.is(status['flow.total_passed'], 6);
  t.is(status['sources.http.total_entries'], 8);
  t.is(status['sources.http.parse_errors'], 1);
  t.is(status['sources.tcp.total_entries'], 4);
  t.is(status.restarts, 0, 'the worker never crashed (an entry without an id passes the window and its journal)');
});
