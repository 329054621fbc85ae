// Balanced paths (`fanout = "balance"`, issue 40 acceptance 5): an edge with three chain paths
// sends each entry down one of them, so a collector without dedup receives each line once; with
// a relay SIGKILLed mid-burst, its unacknowledged entries fail over and a dedup collector has
// every line exactly once. Every node is a real process on 127.0.0.1.

import { mkdirSync } from 'node:fs';
import { join } from 'node:path';
import test from 'ava';
import { appendLines, collectorToml, edgeToml, relayToml, Tally, waitAllDelivered } from '../helpers/exactly-once.js';
import { killWithWorkers, nodeStarter, freePort, ownedTempDir, type RunningNode, sleep, waitFor, waitReady } from '../helpers/node.js';
import { latestCounter, latestStatus } from '../helpers/status.js';

const DEBUG = ['--logging.level=debug'];

function fleet(t: { teardown(fn: () => unknown): void }) {
  const dir = ownedTempDir(t, 'logrelay-balance-');
  const running: RunningNode[] = [];
  const starter = nodeStarter(dir, running);
  const nodes = new Map<string, RunningNode>();
  t.teardown(async () => {
    for (const n of running) n.child.kill('SIGKILL');
    await Promise.all(running.map((n) => n.exited));
  });
  return {
    dir,
    nodes,
    async start(name: string, toml: string): Promise<RunningNode> {
      const node = starter(name, toml, DEBUG);
      nodes.set(name, node);
      await waitReady(node, name, 30_000);
      return node;
    },
  };
}

test.serial('balance, three paths, steady state: each line reaches a collector without dedup once, and every path carries a share', async (t) => {
  t.timeout(180_000);
  const f = fleet(t);
  const ports = await Promise.all([freePort(), freePort(), freePort(), freePort()]);
  const [cPort, ...relayPorts] = ports as [number, number, number, number];
  const collector = await f.start('collector', collectorToml(cPort, false));
  for (const [i, p] of relayPorts.entries()) await f.start(`relay-${i}`, relayToml(`relay-${i}`, p, [cPort]));
  const app = join(f.dir.path, 'app');
  mkdirSync(app);
  const edge = await f.start('edge', edgeToml(app, relayPorts, { fanout: 'balance' }));
  // the links are up before the first line (they dial at start)
  await waitFor(() => [0, 1, 2].every((i) => latestCounter(edge, 'app', `sinks.to${i}.connected`) === 1), 'the three links up');
  const total = 30_000;
  const tally = new Tally(() => collector);
  for (let i = 0; i < total; i += 1000) {
    appendLines(join(app, 'app.log'), i, i + 1000);
    await sleep(20);
  }
  await waitFor(() => tally.distinct === total, `all ${total} lines at the collector`, 90_000);
  await sleep(1000);
  t.is(tally.duplicates, 0, 'received equals unique: no line went down two paths');
  const s = await waitFor(() => {
    const r = latestStatus(edge, 'app');
    return r && [0, 1, 2].reduce((n, i) => n + Number(r[`sinks.to${i}.total_processed`]), 0) === total ? r : undefined;
  }, 'the edge reports every line taken once by one of its sinks');
  const shares = [0, 1, 2].map((i) => Number(s[`sinks.to${i}.total_processed`]));
  t.log(`shares of the three paths: ${shares.join(', ')}`);
  for (const [i, n] of shares.entries()) t.true(n > 0, `path ${i} carried ${n}`);
  t.is(s.total_dropped_by_sink, 0);
});

test.serial('balance: a relay SIGKILLed mid-burst loses nothing; the dedup collector has every line exactly once', async (t) => {
  t.timeout(180_000);
  const f = fleet(t);
  const [aPort, bPort, cPort] = [await freePort(), await freePort(), await freePort()];
  const collector = await f.start('collector', collectorToml(cPort, true, 'http_chain'));
  await f.start('relay-a', relayToml('relay-a', aPort, [cPort], 'http_chain'));
  await f.start('relay-b', relayToml('relay-b', bPort, [cPort], 'http_chain'));
  const app = join(f.dir.path, 'app');
  mkdirSync(app);
  const total = 200_000;
  appendLines(join(app, 'app.log'), 0, total);
  const edge = await f.start('edge', edgeToml(app, [aPort, bPort], { fanout: 'balance' }));
  const tally = new Tally(() => collector);
  await waitFor(() => tally.distinct >= total / 4, 'a quarter through', 90_000);
  await killWithWorkers(f.nodes.get('relay-a')!);
  t.log(`relay-a SIGKILLed with ${tally.distinct} lines at the collector`);
  // the edge never stalls: the collector's count grows in every 10 s window until all are in
  await waitAllDelivered(tally, total);
  await sleep(1000);
  t.deepEqual(tally.missing(total), []);
  t.is(tally.duplicates, 0, 'every line exactly once');
  const failedOver = await waitFor(() => latestCounter(edge, 'app', 'sinks.to0.failed_over'), 'failed_over reported');
  t.log(`failed_over from relay-a: ${failedOver}`);
  t.true(failedOver > 0, 'what relay-a held went to relay-b');
});
