// The syslog sink's link (DESIGN.md §17) against receivers the test runs: dialling a receiver
// that is not up yet (backoff, `connected`, `reconnects`), a receiver that drops the link,
// newline framing with RFC 3164, and UDP datagrams carrying the pipeline's formatted line.

import { createSocket } from 'node:dgram';
import { createServer, type Server, type Socket } from 'node:net';
import { join } from 'node:path';
import test from 'ava';
import { feed, QUICK_BACKOFF, SENDER_HEAD, tlsBlock } from '../helpers/chain.js';
import { freePort, type RunningNode, sleep, spawnOwnedNode, tempDir, waitFor, waitReady } from '../helpers/node.js';
import { makePki } from '../helpers/pki.js';
import { latestStatus } from '../helpers/status.js';
import { localPluginToml } from '../helpers/toml.js';
import { FrameDecoder } from '../../src/syslog/framing.js';
import { parseSyslog } from '../../src/syslog/parse.js';

const tmp = tempDir('logrelay-syslog-sink-');
test.after.always(() => tmp.remove());

/** A node at debug (status every 200 ms) reading stdin into a syslog sink `sys` on `port` with `config` lines. */
function sender(t: Parameters<typeof spawnOwnedNode>[0], port: number, config: string, head = SENDER_HEAD, name = `send-${port}`): RunningNode {
  const toml = `${head}${localPluginToml('sinks', 'sys', 'syslog', port, `${QUICK_BACKOFF}${config}`)}`;
  return spawnOwnedNode(t, ['-c', tmp.file(`${name}.toml`, toml), '--logging.level=debug', '--status_interval_ms=200'], { stdin: 'pipe' });
}

/** A TCP receiver decoding frames with `framing`; `frames` fills as they arrive. */
function receiver(port: number, framing: 'auto' | 'newline' = 'auto') {
  const frames: string[] = [];
  const sockets = new Set<Socket>();
  const server: Server = createServer((s) => {
    sockets.add(s);
    s.on('close', () => sockets.delete(s));
    s.on('error', () => {});
    const d = new FrameDecoder(framing, 1 << 20);
    s.on('data', (chunk: Buffer) => d.push(chunk, (f) => frames.push(f.toString())));
  });
  const listening = new Promise<void>((resolve) => server.listen(port, '127.0.0.1', resolve));
  return {
    frames,
    sockets,
    listening,
    close: () => {
      for (const s of sockets) s.destroy();
      return new Promise<void>((resolve) => server.close(() => resolve()));
    },
  };
}

const NOW = Date.now();
const messages = (frames: readonly string[]) => frames.map((f) => parseSyslog(f, NOW, '?').entry.message);
const numbered = (n: number) => Array.from({ length: n }, (_, i) => `entry ${String(i).padStart(6, '0')}`);

test.serial('a receiver that is not up yet: the sink retries with backoff, then delivers everything', async (t) => {
  t.timeout(60_000);
  const port = await freePort();
  const node = sender(t, port, 'on_full = "block"');
  await waitReady(node, 'sender');
  const total = 5000;
  void feed(node.child.stdin!, total, 1000, 0, false);
  await waitFor(() => {
    const s = latestStatus(node, 'send');
    return s && Number(s['sinks.sys.reconnects']) >= 2 && s['sinks.sys.connected'] === 0;
  }, 'the sink reports failed attempts');
  await waitFor(() => node.records.some((r) => r.level === 'warn' && r.msg === 'Syslog link cannot connect, retrying'), 'WARN Syslog link cannot connect');
  const recv = receiver(port);
  t.teardown(() => recv.close());
  await recv.listening;
  await waitFor(() => recv.frames.length >= total, `all ${total} frames arrive`, 30_000);
  t.deepEqual(messages(recv.frames), numbered(total));
  const parsed = parseSyslog(recv.frames[0]!, NOW, '?').entry;
  t.is(parsed.source, 'stdin');
  t.is(parsed.fields?.facility, 'local0');
  await waitFor(() => latestStatus(node, 'send')?.['sinks.sys.connected'] === 1, 'connected = 1');
});

test.serial('a receiver that stops reading for a while: the sink waits for drain and loses nothing', async (t) => {
  t.timeout(120_000);
  const port = await freePort();
  const recv = receiver(port);
  t.teardown(() => recv.close());
  await recv.listening;
  const node = sender(t, port, 'on_full = "block"\nwrite_timeout_ms = 60000');
  await waitReady(node, 'sender');
  node.child.stdin!.write('first\n');
  await waitFor(() => recv.sockets.size === 1 && recv.frames.length === 1, 'connected, first frame in');
  const [socket] = [...recv.sockets];
  socket!.pause();
  const total = 200_000;
  const fed = feed(node.child.stdin!, total, 5000, 0, false);
  // the kernel buffers fill, write() returns false and the sink waits for 'drain': it stalls
  const processed = () => Number(latestStatus(node, 'send')?.['sinks.sys.total_processed'] ?? 0);
  let last = -1;
  await waitFor(
    async () => {
      const before = processed();
      await sleep(1000);
      last = processed();
      return last > 0 && last === before && last < total;
    },
    'the sink stalls behind the paused receiver',
    40_000,
  );
  t.log(`stalled at ${last} of ${total}`);
  socket!.resume();
  await fed;
  await waitFor(() => recv.frames.length >= total + 1, `all ${total} frames arrive`, 60_000);
  t.deepEqual(messages(recv.frames.slice(1)), numbered(total));
  t.is(recv.frames.length, total + 1);
});

test.serial('a receiver that drops the link: the sink reconnects and later entries arrive', async (t) => {
  t.timeout(60_000);
  const port = await freePort();
  const recv = receiver(port, 'newline');
  t.teardown(() => recv.close());
  await recv.listening;
  const node = sender(t, port, 'framing = "newline"\nformat = "rfc3164"\nfacility = 3');
  await waitReady(node, 'sender');
  node.child.stdin!.write('first\n{"msg":"two\\nlines","level":"error"}\n');
  await waitFor(() => recv.frames.length >= 2, 'two frames');
  const [first, second] = recv.frames.map((f) => parseSyslog(f, NOW, '?').entry);
  t.deepEqual([first?.source, first?.message, first?.level, first?.fields?.facility], ['stdin', 'first', 'INFO', 'daemon']);
  t.is(second?.message, 'two#012lines', 'a line break inside a newline-framed message is escaped');
  t.is(second?.level, 'ERROR');
  for (const s of recv.sockets) s.destroy();
  // the sink redials within its backoff (100 ms), quicker than a status report may show connected = 0
  await waitFor(() => Number(latestStatus(node, 'send')?.['sinks.sys.reconnects']) >= 1, 'the sink notices the drop and redials');
  node.child.stdin!.write('third\n');
  await waitFor(() => recv.frames.length >= 3, 'the entry after the drop arrives');
  t.is(parseSyslog(recv.frames[2]!, NOW, '?').entry.message, 'third');
  await waitFor(() => latestStatus(node, 'send')?.['sinks.sys.connected'] === 1, 'connected again');
  await waitFor(() => node.records.some((r) => r.msg === 'Syslog link disconnected'), 'Syslog link disconnected logged');
});

test.serial('udp with format "line": one datagram per entry carrying the formatted line', async (t) => {
  t.timeout(30_000);
  const port = await freePort();
  const sock = createSocket('udp4');
  const got: string[] = [];
  sock.on('message', (m) => got.push(m.toString()));
  await new Promise<void>((resolve) => sock.bind(port, '127.0.0.1', resolve));
  t.teardown(() => sock.close());
  const head = `${SENDER_HEAD}[pipelines.flow.format]\ntype = "json"\n`;
  const node = sender(t, port, 'mode = "udp"\nformat = "line"', head);
  await waitReady(node, 'sender');
  void feed(node.child.stdin!, 100, 10, 10, false);
  await waitFor(() => got.length >= 100, '100 datagrams');
  t.deepEqual(
    got.map((g) => (JSON.parse(g) as { message: string }).message),
    numbered(100),
  );
});

test.serial('sink to source over mutual TLS with auth: the allowed identity delivers, another is refused and counted', async (t) => {
  t.timeout(60_000);
  const pki = makePki(join(tmp.path, 'pki'), ['relay', 'edge-01', 'intruder']);
  const port = await freePort();
  const server = { cert_file: pki.cert('relay'), key_file: pki.key('relay'), client_ca_file: pki.ca };
  const recvToml = `[[pipelines]]
name = "recv"
[pipelines.flow.format]
type = "json"
${localPluginToml('sources', 'in', 'syslog', port, `${tlsBlock('pipelines.plugin_sources.config', server)}[pipelines.plugin_sources.config.auth]\nallow = ["edge-01"]\n`)}
[[pipelines.plugin_sinks]]
type = "stdout"
`;
  const recv = spawnOwnedNode(t, ['-c', tmp.file('tls-recv.toml', recvToml), '--logging.level=debug', '--status_interval_ms=200']);
  await waitReady(recv, 'receiver');
  const client = (name: string) => tlsBlock('pipelines.plugin_sinks.config', { ca_file: pki.ca, cert_file: pki.cert(name), key_file: pki.key(name) });
  const good = sender(t, port, client('edge-01'), SENDER_HEAD, 'tls-good');
  const bad = sender(t, port, client('intruder'), SENDER_HEAD, 'tls-bad');
  await Promise.all([waitReady(good, 'allowed sender'), waitReady(bad, 'refused sender')]);
  good.child.stdin!.write('over tls\n');
  bad.child.stdin!.write('from the intruder\n');
  await waitFor(() => recv.out.some((l) => l.includes('"over tls"')), 'the allowed entry arrives');
  await waitFor(() => Number(latestStatus(recv, 'recv')?.['sources.in.auth_rejected']) >= 1, 'auth_rejected counted');
  await waitFor(() => recv.records.some((r) => r.msg === 'Authorization rejected' && r.identity === 'intruder'), 'WARN Authorization rejected (worker log lines come batched, after the counter may)');
  t.false(recv.out.some((l) => l.includes('intruder')));
  await waitFor(() => latestStatus(good, 'send')?.['sinks.sys.connected'] === 1, 'the allowed sender is connected');
});
