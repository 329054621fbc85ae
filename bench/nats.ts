// NATS JetStream bench (DESIGN.md §19) beside one tcp_chain hop, in the same run, on 127.0.0.1:
// node A is file source → sink (nats or tcp_chain), node B is source (nats or tcp_chain) → null.
// For nats, A publishes to a stream on one nats-server (R1) or on a three-server cluster with
// three replicas (R3), and B pulls from a durable consumer. A file of BENCH_LINES lines of 200
// bytes, written beforehand, is renamed into A's watched directory; timed from the rename until
// B's worker had read what its null sink took (see readEnd in proc.ts). A's sink blocks when
// full, so nothing is dropped. Peak RSS of A's and B's pipeline workers; the nats-servers' RSS is
// their own (shown apart), and so is the CPU (user + system) each used during the run. Every step
// has a deadline. The three scenarios run BENCH_RUNS (3) times, interleaved (hop, R1, R3, hop, …):
// the table has each one's median run, and each ratio is taken against the hop of the same round.
//   BENCH_LINES=200000 node dist/bench/nats.js     BENCH_ONLY=R1 (or R3) runs the hop and that one;
//   BENCH_NATS_SINK / BENCH_NATS_SOURCE: extra lines for the nats sink's / source's table

import { mkdirSync, renameSync } from 'node:fs';
import { performance } from 'node:perf_hooks';
import { chainSinkToml, chainSourceToml } from '../test/helpers/chain.js';
import { createStream, type NatsServer, natsClient, natsSinkToml, natsSourceToml, startNats } from '../test/helpers/nats.js';
import { freePort, type RunningNode, spawnNode, tempDir, waitReady } from '../test/helpers/node.js';
import { latestStatus } from '../test/helpers/status.js';
import { fileSourceToml, sinkToml } from '../test/helpers/toml.js';
import { writeInput } from './input.js';
import { childPids, cpuMs, peakRss, readEnd } from './proc.js';
import { markdownTable, median, medianRun, rate, runIfMain, spread } from './report.js';

const LINES = Number(process.env.BENCH_LINES ?? 1_000_000);
const RUNS = Math.max(1, Number(process.env.BENCH_RUNS ?? 3));
const ONLY = process.env.BENCH_ONLY;
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
  /** CPU (user + system) during the run, ms: the sender's worker, the receiver's, the nats-servers' together */
  readonly cpu: readonly [sender: number, receiver: number, servers: number];
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
      sinkTable = natsSinkToml('link', servers, `subject = "bench.a"\non_full = "block"\n${process.env.BENCH_NATS_SINK ?? ''}`);
      sourceTable = natsSourceToml('link', servers, 'BENCH', 'bench', process.env.BENCH_NATS_SOURCE ?? '');
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
    const pids = [childPids(a.child.pid!), childPids(b.child.pid!), servers.flatMap((x) => (x.pid === undefined ? [] : [x.pid]))];
    const cpuOf = () => pids.map((list) => list.reduce((sum, pid) => sum + cpuMs(pid), 0));
    const cpu0 = cpuOf();
    const worker = pids[1]![0];
    if (worker === undefined) throw new Error(`${s.title}: the receiver has no worker`);
    const t0 = performance.now();
    renameSync(input, `${watch}/app.log`);
    let t1: number;
    try {
      t1 = await readEnd(worker, () => processedAtB(b) >= LINES, () => `${s.title}: ${processedAtB(b)} of ${LINES} entries at the receiver`, DEADLINE_MS);
    } finally {
      renameSync(`${watch}/app.log`, input);
    }
    const eps = LINES / ((t1 - t0) / 1000);
    const cpu = cpuOf().map((c, i) => c - cpu0[i]!) as [number, number, number];
    const rssOf = (node: RunningNode) => Math.max(0, ...childPids(node.child.pid!).map(peakRss));
    const serverRss = Math.max(0, ...servers.map((x) => (x.pid === undefined ? 0 : peakRss(x.pid))));
    return { title: s.title, entriesPerSec: eps, senderRss: rssOf(a), receiverRss: rssOf(b), serverRss, cpu };
  } finally {
    await cleanup.run();
  }
}

export async function main(): Promise<Result[]> {
  const dir = tempDir('logrelay-bench-nats-');
  const scenarios = SCENARIOS.filter((s) => s.servers === 0 || !ONLY || s.title.includes(ONLY));
  /** rounds[r][i]: scenario i in round r */
  const rounds: Result[][] = [];
  try {
    const input = `${dir.path}/input.log`;
    writeInput(input, LINES, LINE_BYTES);
    for (let r = 0; r < RUNS; r++) {
      const round: Result[] = [];
      for (const [i, s] of scenarios.entries()) {
        const result = await run(s, dir, input, r * SCENARIOS.length + i);
        round.push(result);
        const [cs, cr, cn] = result.cpu.map((ms) => (ms / 1000).toFixed(2));
        process.stderr.write(`run ${r + 1} of ${RUNS}: ${s.title}: ${rate(result.entriesPerSec)}/s; CPU s: sender ${cs}, receiver ${cr}${s.servers > 0 ? `, nats-server(s) ${cn}` : ''}\n`);
      }
      rounds.push(round);
    }
  } finally {
    dir.remove();
  }
  const medians = scenarios.map((_, i) => medianRun(rounds.map((round) => round[i]!), (r) => r.entriesPerSec));
  const ratios = scenarios.map((_, i) => rounds.map((round) => round[i]!.entriesPerSec / round[0]!.entriesPerSec));
  const head = ['scenario (127.0.0.1)', 'entries/s (median)', 'runs', '× the hop (median; each round)', 'CPU s: sender, receiver, server(s)', 'sender peak RSS MiB', 'receiver peak RSS MiB', 'nats-server peak RSS MiB (max of its servers)'];
  const mib = (b: number) => (b === 0 ? '–' : (b / MiB).toFixed(1));
  const rows = medians.map((m, i) => {
    const all = rounds.map((round) => round[i]!.entriesPerSec);
    return [
      m.title,
      rate(m.entriesPerSec),
      spread(all),
      i === 0 ? '1' : `${median(ratios[i]!).toFixed(2)} (${ratios[i]!.map((x) => x.toFixed(2)).join(', ')})`,
      m.cpu.slice(0, m === medians[0] ? 2 : 3).map((ms) => (ms / 1000).toFixed(2)).join(', '),
      mib(m.senderRss),
      mib(m.receiverRss),
      mib(m.serverRss),
    ];
  });
  console.log(`NATS JetStream vs one chain hop: ${LINES.toLocaleString('en-US')} entries of ${LINE_BYTES} bytes (file → sink → [JetStream] → source → null, two nodes), ${RUNS} rounds`);
  console.log(markdownTable(head, rows, true));
  return medians;
}

runIfMain(import.meta.url, main, { exitWhenDone: true });
