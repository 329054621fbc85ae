// Redundant paths (`fanout = "any"`, DESIGN.md §7) with one relay down from the start: the live
// link sends every entry once. Before, the dead link's sink took the entries too while both were
// dialing, and its failover handed them to the live sink, which had already sent them (40 sent
// for 20 lines).

import test from 'ava';
import { chainReceiverToml, chainSinkToml, feedWithin60s, parseReceived, QUICK_BACKOFF } from '../helpers/chain.js';
import { freePort, nodeStarter, ownedTempDir, type RunningNode, sleep, waitFor, waitReady } from '../helpers/node.js';
import { latestCounter, statusAfter } from '../helpers/status.js';

test.serial('fanout any, one relay down from the start: the live link sends each entry once', async (t) => {
  const dir = ownedTempDir(t);
  const running: RunningNode[] = [];
  t.teardown(async () => {
    for (const n of running) await n.stop();
  });
  const start = nodeStarter(dir, running);
  const [livePort, deadPort] = [await freePort(), await freePort()];
  const recv = start('recv', chainReceiverToml('tcp_chain', livePort));
  await waitReady(recv, 'receiver');
  const edge = start(
    'edge',
    `status_interval_ms = 500\n[logging]\nlevel = "debug"\n[[pipelines]]\nname = "send"\nfanout = "any"\n[[pipelines.plugin_sources]]\ntype = "stdin"\n` +
      chainSinkToml('live', 'tcp_chain', livePort, 'edge', QUICK_BACKOFF) +
      chainSinkToml('dead', 'tcp_chain', deadPort, 'edge', QUICK_BACKOFF),
    [],
    true,
  );
  await waitReady(edge, 'edge');
  await feedWithin60s(edge.child.stdin!, 20, 20, 0);
  await waitFor(() => recv.out.length >= 20, 'the 20 entries at the receiver', 30_000);
  const received = Date.now();
  // the dead link has failed (and failed over) several times since
  await waitFor(() => (latestCounter(edge, 'send', 'sinks.dead.reconnects') ?? 0) >= 3, 'the dead link retried three times', 30_000);
  await sleep(1_000); // a second copy would have arrived by now: the live link is idle and up
  const got = parseReceived(recv.out);
  t.is(got.length, 20, 'each entry once at the receiver');
  t.is(new Set(got.map((e) => e.message)).size, 20);
  // from a report of after the receiver had them all (the latest may be of a second before)
  const s = await waitFor(() => statusAfter(edge, 'send', received), 'a status report from after the receiver had the 20', 30_000);
  t.is(s['sinks.live.total_processed'], 20);
  t.is(s['sinks.dead.failed_over'], 0, 'nothing was handed over: the live path had it all');
});
