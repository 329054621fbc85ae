// Two real nodes linked by tcp_chain on 127.0.0.1: delivery in order, recovery from a receiver
// killed with SIGKILL, and an unreachable receiver that must not stall the sender's other sinks.

import type { Writable } from 'node:stream';
import test from 'ava';
import { childPids, freePort, type LogRecord, type RunningNode, spawnNode, tempDir, waitFor } from '../helpers/node.js';

const tmp = tempDir('logrelay-tcp-chain-');
test.after.always(() => tmp.remove());

const running: RunningNode[] = [];
test.afterEach.always(async () => {
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
type = "tcp_chain"
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
type = "tcp_chain"
[pipelines.plugin_sinks.config]
host = "127.0.0.1"
port = ${port}
node = "edge-a"
backoff_min_ms = 100
backoff_max_ms = 1000
${extra}
`;

const numbered = (from: number, to: number) => {
  let s = '';
  for (let i = from; i < to; i++) s += `entry ${String(i).padStart(6, '0')}\n`;
  return s;
};

async function feed(stdin: Writable, total: number, chunk: number, pauseMs: number): Promise<void> {
  for (let i = 0; i < total; i += chunk) {
    if (!stdin.write(numbered(i, Math.min(total, i + chunk)))) await new Promise((r) => stdin.once('drain', r));
    if (pauseMs > 0) await new Promise((r) => setTimeout(r, pauseMs));
  }
  stdin.end();
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

test.serial('100,000 numbered entries arrive complete, in order, with node set', async (t) => {
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
  let inOrder = true;
  for (let i = 0; i < got.length; i++) {
    if (numberOf(got[i]!) !== i) {
      inOrder = false;
      t.fail(`entry ${i} is ${got[i]!.message}`);
      break;
    }
  }
  t.true(inOrder);
  t.true(got.every((e) => e.node === 'edge-a' && e.source === 'stdin'));
});

test.serial('receiver killed with SIGKILL and restarted: sender reconnects, every entry arrives at least once', async (t) => {
  const port = await freePort();
  const cfg = receiverToml(port);
  const b1 = start('recv2', cfg);
  await waitReady(b1, 'receiver');
  const a = start('send2', senderToml(port, 'on_full = "block"'), ['--logging.level=debug'], true);
  await waitReady(a, 'sender');
  const total = 60_000;
  const feeding = feed(a.child.stdin!, total, 500, 15);
  await waitFor(() => b1.out.length >= 10_000, 'first receiver has 10,000 entries', 30_000);
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
  await waitFor(() => latestStatus(a, 'send')?.['sinks.link.connected'] === 0, 'sender notices the link is down', 20_000);
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
  t.true(parse(b2.out).every((e) => e.node === 'edge-a'));
  const status = await waitFor(() => {
    const s = latestStatus(a, 'send');
    return s && Number(s['sinks.link.reconnects']) > 0 && s['sinks.link.connected'] === 1 ? s : undefined;
  }, 'sender reports a reconnect');
  t.true(Number(status['sinks.link.reconnects']) >= 1);
});

test.serial('an unreachable receiver fills the sink queue and drops there; the other sink gets everything', async (t) => {
  const port = await freePort();
  const toml = `${senderToml(port, 'buffer_size = 500')}
[[pipelines.plugin_sinks]]
id = "out"
type = "stdout"
[pipelines.plugin_sinks.config]
buffer_size = 5000
on_full = "block"
`;
  const a = start('send3', toml, ['--logging.level=debug'], true);
  await waitReady(a, 'sender');
  const total = 20_000;
  await feed(a.child.stdin!, total, 1000, 5);
  await waitFor(() => a.out.length >= total, `stdout sink got all ${total} (has ${a.out.length})`, 30_000);
  t.is(a.out[total - 1], `entry ${String(total - 1).padStart(6, '0')}`);
  const status = await waitFor(() => {
    const s = latestStatus(a, 'send');
    // what is neither taken by the sink nor dropped sits in its queue, at most buffer_size
    return s && s['flow.total_processed'] === total && Number(s['sinks.link.total_processed']) + Number(s.total_dropped_by_sink) >= total - 500
      ? s
      : undefined;
  }, 'status shows every entry taken, queued or dropped for the chain sink');
  t.true(Number(status.total_dropped_by_sink) > 0);
  t.is(status['sinks.link.connected'], 0);
  // sent-but-unacknowledged entries stay bounded by buffer_size (plus one batch in flight)
  t.true(Number(status['sinks.link.unacked']) <= 500 + 1024);
  t.true(Number(status['sinks.link.reconnects']) >= 1);
  t.true(a.records.some((r) => r.level === 'warn' && r.msg === 'Chain link cannot connect, retrying'));
});
