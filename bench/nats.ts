// NATS JetStream bench (DESIGN.md §19) beside one tcp_chain hop, in the same run, on 127.0.0.1:
// node A is file source → sink (nats or tcp_chain), node B is source (nats or tcp_chain) → null.
// For nats, A publishes to a stream on one nats-server (R1) or on a three-server cluster with
// three replicas (R3), and B pulls from a durable consumer. A file of BENCH_LINES lines of 200
// bytes, written beforehand, is renamed into A's watched directory; timed from the rename until
// B's status report (every 100 ms) shows every entry taken by its null sink. A's sink blocks when
// full, so nothing is dropped. Peak RSS of A's and B's pipeline workers; the nats-servers' RSS is
// their own (shown apart). Every step has a deadline.
//   BENCH_LINES=200000 node dist/bench/nats.js

import { mkdirSync, renameSync } from 'node:fs';
import { performance } from 'node:perf_hooks';
import { chainSinkToml, chainSourceToml } from '../test/helpers/chain.js';
import { createStream, type NatsServer, natsClient, natsSinkToml, natsSourceToml, startNats } from '../test/helpers/nats.js';
import { freePort, type RunningNode, spawnNode, tempDir, waitFor, waitReady } from '../test/helpers/node.js';
import { latestStatus } from '../test/helpers/status.js';
import { fileSourceToml, sinkToml } from '../test/helpers/toml.js';
import { writeInput } from './input.js';
import { childPids, peakRss } from './proc.js';
import { markdownTable, runIfMain } from './report.js';

const LINES = Number(process.env.BENCH_LINES ?? 1_000_000);
const LINE_BYTES = 200;
const DEADLINE_MS = 300_000;
const MiB = 1024 * 1024;

interface Scenario {
  readonly title: string;
  /** nats-servers: 0 for the tcp_chain hop */
  readonly servers: 0 | 1 | 3;
}

const SCENARIOS: readonly Scenario[] = [
  { title: 'tcp_chain (one hop)', servers: 0 },
  { title: 'nats → JetStream R1 → nats', servers: 1 },
  { title: 'nats → JetStream R3 (3 servers) → nats', servers: 3 },
];

interface Result {
  readonly title: string;
  readonly entriesPerSec: number;
  readonly senderRss: number;
  readonly receiverRss: number;
  readonly serverRss: number;
}

/** Teardown steps of one scenario (the test helpers' contract), run in reverse at its end. */
class Cleanup {
  private readonly steps: (() => unknown)[] = [];
  teardown(fn: () => unknown): void {
    this.steps.push(fn);
  }
  async run(): Promise<void> {
    for (const fn of this.steps.reverse()) await fn();
  }
}

const processedAtB = (node: RunningNode): number => Number(latestStatus(node, 'b')?.['sinks.out.total_processed'] ?? 0);

async function run(s: Scenario, dir: ReturnType<typeof tempDir>, input: string, n: number): Promise<Result> {
  const cleanup = new Cleanup();
  const watch = `${dir.path}/watch-${n}`;
  mkdirSync(watch);
  const source = fileSourceToml('in', watch, 'pattern = "*.log"\nfrom = "start"\ncheck_interval_ms = 50');
  let servers: NatsServer[] = [];
  let sinkTable: string;
  let sourceTable: string;
  try {
    if (s.servers > 0) {
      servers = await startNats(cleanup, s.servers);
      const nc = await natsClient(cleanup, servers);
      await createStream(nc, 'BENCH', ['bench.>'], s.servers);
      sinkTable = natsSinkToml('link', servers, 'subject = "bench.a"\non_full = "block"');
      sourceTable = natsSourceToml('link', servers, 'BENCH', 'bench');
    } else {
      const port = await freePort();
      sinkTable = chainSinkToml('link', 'tcp_chain', port, 'edge', 'on_full = "block"\n');
      sourceTable = chainSourceToml('link', 'tcp_chain', port);
    }
    const b = spawnNode(['-c', dir.file(`b-${n}.toml`, `status_interval_ms = 100\n[[pipelines]]\nname = "b"\n${sourceTable}${sinkToml('out', 'null')}`), '--logging.level=debug']);
    cleanup.teardown(() => b.stop(10_000));
    const a = spawnNode(['-c', dir.file(`a-${n}.toml`, `[[pipelines]]\nname = "a"\n${source}${sinkTable}`)]);
    cleanup.teardown(() => a.stop(10_000));
    await Promise.all([waitReady(b, 'receiver'), waitReady(a, 'sender')]);
    const t0 = performance.now();
    renameSync(input, `${watch}/app.log`);
    try {
      await waitFor(() => processedAtB(b) >= LINES, `${s.title}: ${LINES} entries at the receiver (have ${processedAtB(b)})`, DEADLINE_MS);
    } finally {
      renameSync(`${watch}/app.log`, input);
    }
    const eps = LINES / ((performance.now() - t0) / 1000);
    const rssOf = (node: RunningNode) => Math.max(0, ...childPids(node.child.pid!).map(peakRss));
    const serverRss = Math.max(0, ...servers.map((x) => (x.pid === undefined ? 0 : peakRss(x.pid))));
    return { title: s.title, entriesPerSec: eps, senderRss: rssOf(a), receiverRss: rssOf(b), serverRss };
  } finally {
    await cleanup.run();
  }
}

export async function main(): Promise<Result[]> {
  const dir = tempDir('logrelay-bench-nats-');
  const results: Result[] = [];
  try {
    const input = `${dir.path}/input.log`;
    writeInput(input, LINES, LINE_BYTES);
    for (const [n, s] of SCENARIOS.entries()) {
      results.push(await run(s, dir, input, n));
      process.stderr.write(`${s.title}: done\n`);
    }
  } finally {
    dir.remove();
  }
  const head = ['scenario (127.0.0.1)', 'entries/s', 'sender peak RSS MiB', 'receiver peak RSS MiB', 'nats-server peak RSS MiB (max of its servers)'];
  const mib = (b: number) => (b === 0 ? '–' : (b / MiB).toFixed(1));
  const rows = results.map((r) => [r.title, Math.round(r.entriesPerSec).toLocaleString('en-US'), mib(r.senderRss), mib(r.receiverRss), mib(r.serverRss)]);
  console.log(`NATS JetStream vs one chain hop: ${LINES.toLocaleString('en-US')} entries of ${LINE_BYTES} bytes (file → sink → [JetStream] → source → null, two nodes)`);
  console.log(markdownTable(head, rows, true));
  return results;
}

runIfMain(import.meta.url, main, { exitWhenDone: true });
