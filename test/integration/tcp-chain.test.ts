// Two real nodes linked by tcp_chain on 127.0.0.1: delivery in order, recovery from a receiver
// killed with SIGKILL, an unreachable receiver that must not stall the sender's other sinks, and a
// stalled receiver whose link backs up: what waited goes out once it drains.

import { readFileSync } from 'node:fs';
import test from 'ava';
import {
  chainReceiverToml,
  chainSenderToml,
  duplicatesIn,
  feedWithin60s,
  killReceiverMidStream,
  numberOf,
  parseReceived as parse,
  relayAll,
} from '../helpers/chain.js';
import { freePort, nodeStarter, type RunningNode, tempDir, waitFor, waitReady, workerOf } from '../helpers/node.js';
import { latestStatus } from '../helpers/status.js';

const tmp = tempDir('logrelay-tcp-chain-');
test.after.always(() => tmp.remove());

const running: RunningNode[] = [];
test.afterEach.always(async () => {
  await Promise.all(running.splice(0).map((n) => n.stop(5000)));
});

const start = nodeStarter(tmp, running);
const receiverToml = (port: number) => chainReceiverToml('tcp_chain', port);
const senderToml = (port: number, extra = '') => chainSenderToml('tcp_chain', port, 'edge-a', extra);

test.serial('100,000 numbered entries arrive complete, in order, with node set', async (t) => {
  // two starts (20 s each), the feed (60 s) and the delivery (45 s)
  t.timeout(180_000);
  const port = await freePort();
  const total = 100_000;
  const got = await relayAll(start, receiverToml(port), senderToml(port, 'on_full = "block"'), total);
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
  // two starts (20 s each), the first delivery (30 s), the link down (20 s), the feed (60 s), the
  // full delivery (45 s) and the reconnect report (20 s)
  t.timeout(270_000);
  const port = await freePort();
  const total = 60_000;
  const { a, b2, firstRun, seen } = await killReceiverMidStream(start, receiverToml(port), senderToml(port, 'on_full = "block"'), {
    total,
    firstBatch: 10_000,
    senderNoticed: (s) => latestStatus(s, 'send')?.['sinks.link.connected'] === 0,
    noticeWhat: 'sender notices the link is down',
  });
  t.true(firstRun < total, 'the receiver was killed mid-stream');
  const duplicates = duplicatesIn(seen);
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
  // the start (20 s), the feed (60 s), the delivery (30 s) and the report (20 s)
  t.timeout(180_000);
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
  await feedWithin60s(a.child.stdin!, total, 1000, 5);
  await waitFor(() => a.out.length >= total, `stdout sink got all ${total}`, 30_000);
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
  await waitFor(() => a.records.some((r) => r.level === 'warn' && r.msg === 'Chain link cannot connect, retrying'), 'WARN Chain link cannot connect');
});

test.serial('a receiver stalled mid-burst: what waited for the link to drain goes out once it drains, with nothing written after it', async (t) => {
  // the starts (20 s each), the stalled burst (30 s) and the delivery (45 s)
  t.timeout(180_000);
  const port = await freePort();
  const b = start('recv4', receiverToml(port));
  await waitReady(b, 'receiver');
  // More than the loopback socket buffers of both ends can take (their maxima, whatever this host
  // sets), so the link backs up and the sink holds the last entries until it drains; the sink's
  // bounds above it, so it holds them all
  const kernelMax = (name: string) => Number(readFileSync(`/proc/sys/net/ipv4/${name}`, 'utf8').trim().split(/\s+/)[2]);
  const lineBytes = 4096;
  const total = Math.ceil((kernelMax('tcp_wmem') + kernelMax('tcp_rmem') + 8 * 1024 * 1024) / lineBytes);
  const a = start('send4', senderToml(port, `on_full = "block"\nbuffer_size = ${2 * total}\nbuffer_max_bytes = ${4 * total * lineBytes}\nwrite_timeout_ms = 120000`), ['--logging.level=debug'], true);
  await waitReady(a, 'sender');
  await waitFor(() => a.records.some((r) => r.msg === 'Chain link up'), 'the link up');
  const worker = await workerOf(b);
  process.kill(worker, 'SIGSTOP');
  let stopped = true;
  t.teardown(() => {
    if (stopped) process.kill(worker, 'SIGCONT');
  });
  const pad = 'x'.repeat(lineBytes - 14);
  let text = '';
  for (let i = 0; i < total; i++) text += `entry ${String(i).padStart(6, '0')} ${pad}\n`;
  a.child.stdin!.write(text);
  await waitFor(() => {
    const s = latestStatus(a, 'send');
    return s?.['sinks.link.total_processed'] === total && s['sinks.link.unacked'] === total;
  }, 'the sink holds every entry, none acknowledged', 30_000).catch((err: unknown) => {
    t.log(JSON.stringify(latestStatus(a, 'send')));
    throw err;
  });
  // the link backed up: part of the entries is still unwritten, waiting for it to drain
  const sent = Number(latestStatus(a, 'send')?.['sinks.link.bytes_sent']);
  t.true(sent < total * pad.length, `${sent} bytes written of the ${total * lineBytes} of the entries`);
  process.kill(worker, 'SIGCONT');
  stopped = false;
  // nothing more reaches the sender: the rest must go out when the link drains, by itself
  await waitFor(() => b.out.length >= total, `all ${total} entries at the receiver`, 45_000).catch((err: unknown) => {
    t.log(`the receiver has ${b.out.length}; the sender: ${JSON.stringify(latestStatus(a, 'send'))}`);
    throw err;
  });
  const got = parse(b.out).map((e) => e.message.slice(0, 12));
  const first = got.findIndex((m, i) => m !== `entry ${String(i).padStart(6, '0')}`);
  t.is(first, -1, `entry ${first} is ${got[first]}`);
  t.is(got.length, total);
});
