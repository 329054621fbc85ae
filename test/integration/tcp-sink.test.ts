// The `tcp` sink against plain TCP clients (DESIGN.md §7, §11): lines plus `\n`, input ignored,
// max_connections refusing without data, and a client that stops reading; counters read from the
// status report.

import { connect, type Socket } from 'node:net';
import test from 'ava';
import { freePort, type RunningNode, startOwnedNode, type Teardown, waitFor, waitReady } from '../helpers/node.js';
import { latestCounter } from '../helpers/status.js';
import { localPluginToml, randomSourceToml } from '../helpers/toml.js';

interface LineClient {
  readonly socket: Socket;
  readonly lines: string[];
  bytes: number;
  closed: boolean;
}

function lineClient(port: number): LineClient {
  const socket = connect({ host: '127.0.0.1', port });
  const c: LineClient = { socket, lines: [], bytes: 0, closed: false };
  let rest = '';
  socket.setEncoding('utf8');
  socket.on('data', (chunk: string) => {
    c.bytes += chunk.length;
    rest += chunk;
    const parts = rest.split('\n');
    rest = parts.pop()!;
    c.lines.push(...parts);
  });
  socket.on('error', () => {});
  socket.on('close', () => {
    c.closed = true;
  });
  return c;
}

/** A node at debug with a status report every 300 ms; killed in teardown. */
function startNode(t: Teardown, toml: string): RunningNode {
  return startOwnedNode(t, `status_interval_ms = 300\n${toml}`, ['--logging.level=debug']);
}

function tcpToml(port: number, extra = '', source = 'interval_ms = 20\nlength = 5'): string {
  return `
[[pipelines]]
name = "raw"
[pipelines.flow.format]
type = "txt"
${randomSourceToml(source)}${localPluginToml('sinks', 'lines', 'tcp', port, extra)}
`;
}

async function connected(node: RunningNode, n: number): Promise<void> {
  await waitFor(() => latestCounter(node, 'raw', 'sinks.lines.active_clients') === n, `${n} tcp clients connected (status report)`);
}

test.serial('plain TCP clients receive each formatted line plus \\n; what they send is ignored', async (t) => {
  const port = await freePort();
  const node = startNode(t, tcpToml(port));
  await waitReady(node, 'pipeline');
  const a = lineClient(port);
  const b = lineClient(port);
  a.socket.write('hello?\nignored input\n'.repeat(100));
  await waitFor(() => a.lines.length >= 20 && b.lines.length >= 20, 'lines on both clients');
  const txt = /^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{3}Z [A-Z]+ random [a-z]+( [a-z]+){4}$/;
  for (const line of [...a.lines, ...b.lines]) t.regex(line, txt);
  // both clients see the same stream: b's lines are a contiguous run of a's (or the reverse)
  const common = a.lines.filter((l) => b.lines.includes(l));
  t.true(common.length >= 10);
  await connected(node, 2);
  t.is(latestCounter(node, 'raw', 'sinks.lines.dropped_writes'), 0);
  await waitFor(() => node.records.some((r) => r.msg === 'Session connected' && r.level === 'debug' && r.plugin === 'lines'), 'DEBUG Session connected');
  a.socket.destroy();
  await connected(node, 1);
  await waitFor(() => node.records.some((r) => r.msg === 'Session disconnected' && r.level === 'debug'), 'disconnect logged at debug');
  t.is(await node.stop(), 0);
  await waitFor(() => b.closed, 'client closed at shutdown');
});

test.serial('max_connections = 2: the third connection is closed without data and rejected_conns rises', async (t) => {
  const port = await freePort();
  const node = startNode(t, tcpToml(port, 'max_connections = 2'));
  await waitReady(node, 'pipeline');
  const a = lineClient(port);
  const b = lineClient(port);
  await waitFor(() => a.lines.length > 0 && b.lines.length > 0, 'two clients receive');
  const c = lineClient(port);
  await waitFor(() => c.closed, 'third connection closed');
  t.is(c.bytes, 0);
  await waitFor(() => latestCounter(node, 'raw', 'sinks.lines.rejected_conns') === 1, 'rejected_conns 1');
  t.is(latestCounter(node, 'raw', 'sinks.lines.active_clients'), 2);
  t.false(a.closed || b.closed);
  t.is(await node.stop(), 0);
});

test.serial('a tcp client that stops reading: drops counted, the other keeps receiving, disconnected after write_timeout_ms', async (t) => {
  const port = await freePort();
  const node = startNode(
    t,
    tcpToml(port, 'client_buffer_size = 256\nwrite_timeout_ms = 2000', 'interval_ms = 10\nentries_per_tick = 20\nlength = 150'),
  );
  await waitReady(node, 'pipeline');
  const fast = lineClient(port);
  const slow = lineClient(port);
  slow.socket.pause();
  await connected(node, 2);
  await waitFor(() => (latestCounter(node, 'raw', 'sinks.lines.dropped_writes') ?? 0) > 0, 'slow client drops', 30_000);
  await waitFor(() => latestCounter(node, 'raw', 'sinks.lines.active_clients') === 1, 'slow client disconnected', 20_000);
  t.false(fast.closed);
  // the reader kept up: every line it got is complete, and it got many
  t.true(fast.lines.length > 1000);
  slow.socket.resume();
  await waitFor(() => slow.closed, 'slow connection ends once read');
  t.is(await node.stop(), 0);
});
