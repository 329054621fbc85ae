// Two real nodes linked by http_chain on 127.0.0.1: complete delivery, recovery from a receiver
// killed with SIGKILL, and the sink's answer to a peer that refuses (413) or is busy (503).

import { createServer, type IncomingMessage, type Server } from 'node:http';
import type { Writable } from 'node:stream';
import test from 'ava';
import { childPids, freePort, type LogRecord, type RunningNode, spawnNode, tempDir, waitFor } from '../helpers/node.js';

const tmp = tempDir('logrelay-http-chain-');
test.after.always(() => tmp.remove());

const running: RunningNode[] = [];
const servers: Server[] = [];
test.afterEach.always(async () => {
  for (const s of servers.splice(0)) s.close();
  await Promise.all(running.splice(0).map((n) => n.stop(5000)));
});

function start(name: string, toml: string, args: string[] = [], stdin = false): RunningNode {
  const node = spawnNode(['-c', tmp.file(`${name}.toml`, toml), ...args], stdin ? { stdin: 'pipe' } : {});
  running.push(node);
  return node;
}

const receiverToml = (port: number) => `
[[pipelines]]
name = "recv"
[pipelines.flow.format]
type = "json"
[[pipelines.plugin_sources]]
id = "link"
type = "http_chain"
[pipelines.plugin_sources.config]
host = "127.0.0.1"
port = ${port}
[[pipelines.plugin_sinks]]
type = "stdout"
[pipelines.plugin_sinks.config]
buffer_size = 5000
on_full = "block"
`;

const senderToml = (port: number, extra = '') => `
status_interval_ms = 1000
[[pipelines]]
name = "send"
[[pipelines.plugin_sources]]
type = "stdin"
[[pipelines.plugin_sinks]]
id = "link"
type = "http_chain"
[pipelines.plugin_sinks.config]
host = "127.0.0.1"
port = ${port}
node = "edge-h"
flush_interval_ms = 100
backoff_min_ms = 100
backoff_max_ms = 1000
${extra}
`;

const numbered = (from: number, to: number) => {
  let s = '';
  for (let i = from; i < to; i++) s += `entry ${String(i).padStart(6, '0')}\n`;
  return s;
};

async function feed(stdin: Writable, total: number, chunk: number, pauseMs: number, end = true): Promise<void> {
  for (let i = 0; i < total; i += chunk) {
    if (!stdin.write(numbered(i, Math.min(total, i + chunk)))) await new Promise((r) => stdin.once('drain', r));
    if (pauseMs > 0) await new Promise((r) => setTimeout(r, pauseMs));
  }
  if (end) stdin.end();
}

interface Received {
  node?: string;
  source: string;
  message: string;
}

const parse = (lines: readonly string[]): Received[] => lines.filter((l) => l.startsWith('{')).map((l) => JSON.parse(l) as Received);
const numberOf = (e: Received) => Number(e.message.slice(6));

function latestStatus(node: RunningNode, pipeline: string): LogRecord | undefined {
  for (let i = node.records.length - 1; i >= 0; i--) {
    const r = node.records[i]!;
    if (r.msg === 'status report' && r.pipeline === pipeline) return r;
  }
  return undefined;
}

async function waitReady(node: RunningNode, what: string): Promise<void> {
  await waitFor(() => node.records.some((r) => r.msg === 'Starting pipeline'), `${what} started`, 20_000);
}

interface Answer {
  status: number;
  headers?: Record<string, string>;
}

/** A plain HTTP peer the test controls: answers each POST with `answer(n)` (n counts requests). */
async function fakePeer(answer: (n: number, req: IncomingMessage, body: string) => Answer) {
  let n = 0;
  const srv = createServer((req, res) => {
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
  const port = await freePort();
  const b = start('recv1', receiverToml(port));
  await waitReady(b, 'receiver');
  const a = start('send1', senderToml(port, 'on_full = "block"'), [], true);
  await waitReady(a, 'sender');
  const total = 100_000;
  await feed(a.child.stdin!, total, 10_000, 0);
  await waitFor(() => b.out.length >= total, `all ${total} entries at the receiver (have ${b.out.length})`, 45_000);
  const got = parse(b.out);
  t.is(got.length, total);
  const seen = new Set(got.map(numberOf));
  t.is(seen.size, total, 'no entry missing or repeated');
  t.true(got.every((e, i) => numberOf(e) === i), 'in order');
  t.true(got.every((e) => e.node === 'edge-h' && e.source === 'stdin'));
});

test.serial('receiver killed with SIGKILL and restarted: the http_chain sink retries and every entry arrives', async (t) => {
  const port = await freePort();
  const cfg = receiverToml(port);
  const b1 = start('recv2', cfg);
  await waitReady(b1, 'receiver');
  const a = start('send2', senderToml(port, 'on_full = "block"'), ['--logging.level=debug'], true);
  await waitReady(a, 'sender');
  const total = 40_000;
  const feeding = feed(a.child.stdin!, total, 500, 15);
  await waitFor(() => b1.out.length >= 8_000, 'first receiver has 8,000 entries', 30_000);
  const workers = await childPids(b1.child.pid!);
  b1.child.kill('SIGKILL');
  for (const pid of workers) {
    try {
      process.kill(pid, 'SIGKILL');
    } catch {
      // already gone
    }
  }
  await b1.exited;
  const firstRun = b1.out.length;
  t.true(firstRun < total, 'the receiver was killed mid-stream');
  await waitFor(() => Number(latestStatus(a, 'send')?.['sinks.link.reconnects'] ?? 0) > 0, 'sender counts failed attempts', 20_000);
  const b2 = start('recv2', cfg);
  await feeding;
  const seen = new Map<number, number>();
  const count = () => {
    seen.clear();
    for (const e of [...parse(b1.out), ...parse(b2.out)]) seen.set(numberOf(e), (seen.get(numberOf(e)) ?? 0) + 1);
    return seen.size;
  };
  await waitFor(() => count() >= total, `every entry at least once (have ${seen.size} of ${total})`, 45_000);
  let duplicates = 0;
  for (const n of seen.values()) duplicates += n - 1;
  t.log(`first receiver got ${firstRun}, second ${b2.out.length}; duplicates: ${duplicates}`);
  for (let i = 0; i < total; i++) if (!seen.has(i)) t.fail(`entry ${i} missing`);
  t.is(latestStatus(a, 'send')?.['sinks.link.dropped_batches'] ?? 0, 0);
});

test.serial('a peer answering 413 makes the sink drop batches with an ERROR; a 503 peer is retried until it recovers', async (t) => {
  const refusing = await fakePeer(() => ({ status: 413 }));
  const bodies: string[] = [];
  const busy = await fakePeer((n, req, body): Answer => {
    if (n < 3) return { status: 503, headers: { 'Retry-After': '1' } };
    t.is(req.headers['x-logrelay-protocol'], '1');
    t.is(req.headers['x-logrelay-node'], 'edge-h');
    t.is(req.headers['content-type'], 'application/x-ndjson');
    bodies.push(body);
    return { status: 204, headers: { 'X-Logrelay-Accepted': String(body.split('\n').length - 1) } };
  });
  const toml = `${senderToml(refusing.port)}
[[pipelines.plugin_sinks]]
id = "busy"
type = "http_chain"
[pipelines.plugin_sinks.config]
host = "127.0.0.1"
port = ${busy.port}
node = "edge-h"
flush_interval_ms = 100
backoff_min_ms = 100
backoff_max_ms = 1000
`;
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
  t.true(a.records.some((r) => r.level === 'error' && r.plugin === 'link' && r.msg === 'Chain batch rejected by peer, dropped' && r.status === 413));
});
