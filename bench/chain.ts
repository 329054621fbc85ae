// Chain bench: one hop each way on 127.0.0.1, two real nodes (bin/logrelay.js child processes).
//
// Throughput: node A is file source → chain sink, node B chain source → null. A file of
// 1,000,000 lines of 200 bytes, written beforehand, is renamed into A's watched directory (a file
// born after the start is read whole); timed from the rename until B's status report (every
// 100 ms) shows every entry taken by its null sink. A's chain sink blocks when full, so nothing
// is dropped. Latency: node A is stdin → chain sink (the file source's fixed 100 ms tail poll
// would hide the link), B chain source → stdout; single entries at 1,000 entries/s, each carrying
// the bench's send time; B prints the raw message and the bench takes the receive time itself,
// so both ends use one clock. Scenarios: tcp_chain, tcp_chain with mutual TLS, and http_chain at
// its default batching (flush_interval_ms = 1000), and tcp_chain into a receiver with dedup on
// (window 100,000: the 1,000,000 distinct ids of the run pass through it, so the receiver
// worker's peak RSS shows the window's bound). Every step has a deadline.

import { mkdirSync, renameSync } from 'node:fs';
import { performance } from 'node:perf_hooks';
import { chainSinkToml, chainSourceToml, tlsBlock } from '../test/helpers/chain.js';
import { freePort, type RunningNode, spawnNode, tempDir, waitFor, waitReady } from '../test/helpers/node.js';
import { makePki, type Pki } from '../test/helpers/pki.js';
import { latestStatus } from '../test/helpers/status.js';
import { writeInput } from './input.js';
import { childPids, peakRss } from './proc.js';
import { type ForwardResult, rsyslogForward } from './rsyslog.js';
import { markdownTable, pct, runIfMain } from './report.js';

const LINES = Number(process.env.BENCH_LINES ?? 1_000_000);
const LINE_BYTES = 200;
const LATENCY_ENTRIES = Number(process.env.BENCH_LATENCY_ENTRIES ?? 3000);
const LATENCY_RATE = 1000;
const WARMUP = 200;
const THROUGHPUT_DEADLINE_MS = 180_000;

type Link = 'tcp_chain' | 'http_chain';

interface Scenario {
  readonly title: string;
  readonly link: Link;
  readonly tls: boolean;
  /** the receiver suppresses duplicates (DESIGN.md §14) */
  readonly dedup?: boolean;
}

const SCENARIOS: readonly Scenario[] = [
  { title: 'tcp_chain', link: 'tcp_chain', tls: false },
  { title: 'tcp_chain + mutual TLS', link: 'tcp_chain', tls: true },
  { title: 'http_chain (default batching)', link: 'http_chain', tls: false },
  { title: 'tcp_chain → dedup (window 100,000)', link: 'tcp_chain', tls: false, dedup: true },
];

interface Result {
  readonly title: string;
  readonly entriesPerSec: number;
  /** the receiving worker's peak RSS during the throughput run, bytes */
  readonly receiverRss: number;
  readonly p50: number;
  readonly p99: number;
  readonly max: number;
}

function receiverToml(s: Scenario, port: number, pki: Pki | undefined, sink: 'null' | 'stdout'): string {
  const tls = s.tls && pki ? tlsBlock('pipelines.plugin_sources.config', { cert_file: pki.cert('relay'), key_file: pki.key('relay'), client_ca_file: pki.ca }) : '';
  return `
status_interval_ms = 100
[[pipelines]]
name = "b"
${s.dedup ? '[pipelines.flow.dedup]\nenabled = true\nwindow_entries = 100000\n' : ''}${chainSourceToml('link', s.link, port, tls)}
[[pipelines.plugin_sinks]]
id = "out"
type = "${sink}"
`;
}

/** Node A's source: the watched directory (throughput) or stdin (latency). */
function senderToml(s: Scenario, port: number, pki: Pki | undefined, watch: string | undefined): string {
  const tls =
    s.tls && pki
      ? tlsBlock('pipelines.plugin_sinks.config', { ca_file: pki.ca, cert_file: pki.cert('edge'), key_file: pki.key('edge'), server_name: 'localhost' })
      : '';
  const source = watch
    ? `type = "file"\n[pipelines.plugin_sources.config]\ndirectory = ${JSON.stringify(watch)}\npattern = "*.log"\nfrom = "start"\ncheck_interval_ms = 50`
    : 'type = "stdin"';
  return `
[[pipelines]]
name = "a"
[[pipelines.plugin_sources]]
${source}
${chainSinkToml('link', s.link, port, 'edge', `on_full = "block"\n${tls}`)}
`;
}

const processedAtB = (node: RunningNode): number => Number(latestStatus(node, 'b')?.['sinks.out.total_processed'] ?? 0);

async function pair(s: Scenario, pki: Pki | undefined, dir: ReturnType<typeof tempDir>, sink: 'null' | 'stdout', watch?: string) {
  const port = await freePort();
  const b = spawnNode(['-c', dir.file(`b-${sink}.toml`, receiverToml(s, port, pki, sink)), '--logging.level=debug']);
  const a = spawnNode(['-c', dir.file(`a-${sink}.toml`, senderToml(s, port, pki, watch))], { stdin: watch ? 'ignore' : 'pipe' });
  try {
    await Promise.all([waitReady(b, 'receiver'), waitReady(a, 'sender')]);
  } catch (err) {
    await Promise.all([a.stop(5000), b.stop(5000)]);
    throw err;
  }
  return { a, b };
}

async function throughput(s: Scenario, pki: Pki | undefined, dir: ReturnType<typeof tempDir>, input: string, n: number): Promise<{ eps: number; rss: number }> {
  const watch = `${dir.path}/watch-${n}`;
  mkdirSync(watch);
  const { a, b } = await pair(s, pki, dir, 'null', watch);
  try {
    const t0 = performance.now();
    renameSync(input, `${watch}/app.log`);
    await waitFor(() => processedAtB(b) >= LINES, `${s.title}: ${LINES} entries at the receiver`, THROUGHPUT_DEADLINE_MS);
    const eps = LINES / ((performance.now() - t0) / 1000);
    const rss = Math.max(0, ...childPids(b.child.pid!).map(peakRss));
    renameSync(`${watch}/app.log`, input);
    return { eps, rss };
  } finally {
    await Promise.all([a.stop(10_000), b.stop(10_000)]);
  }
}

async function latency(s: Scenario, pki: Pki | undefined, dir: ReturnType<typeof tempDir>): Promise<number[]> {
  const { a, b } = await pair(s, pki, dir, 'stdout');
  const delays: number[] = [];
  const base = performance.timeOrigin;
  // B prints each entry's message, "lat <seq> <sent ms since timeOrigin>", as a raw line.
  let seen = 0;
  const onData = () => {
    for (; seen < b.out.length; seen++) {
      const parts = b.out[seen]!.split(' ');
      if (parts[0] === 'lat') delays.push(performance.now() - (Number(parts[2]) - base));
    }
  };
  const poll = setInterval(onData, 1);
  try {
    const t0 = performance.now();
    for (let i = 0; i < LATENCY_ENTRIES; ) {
      const due = Math.floor(((performance.now() - t0) * LATENCY_RATE) / 1000);
      for (; i < due && i < LATENCY_ENTRIES; i++) a.child.stdin!.write(`lat ${i} ${base + performance.now()}\n`);
      await new Promise((resolve) => setTimeout(resolve, 1));
    }
    await waitFor(() => {
      onData();
      return delays.length >= LATENCY_ENTRIES;
    }, `${s.title}: every latency entry at the receiver`, 30_000);
    return delays.slice(WARMUP).sort((x, y) => x - y);
  } finally {
    clearInterval(poll);
    a.child.stdin!.end();
    await Promise.all([a.stop(10_000), b.stop(10_000)]);
  }
}

export async function main(): Promise<Result[]> {
  const dir = tempDir('logrelay-bench-chain-');
  const results: Result[] = [];
  let anchor: ForwardResult;
  try {
    const pki = makePki(`${dir.path}/pki`, ['relay', 'edge']);
    const input = `${dir.path}/input.log`;
    writeInput(input, LINES, LINE_BYTES);
    anchor = await rsyslogForward(dir.path, input, LINES, THROUGHPUT_DEADLINE_MS);
    process.stderr.write('rsyslog anchor: done\n');
    for (const [n, s] of SCENARIOS.entries()) {
      const { eps, rss } = await throughput(s, pki, dir, input, n);
      const d = await latency(s, pki, dir);
      results.push({ title: s.title, entriesPerSec: eps, receiverRss: rss, p50: pct(d, 50), p99: pct(d, 99), max: d[d.length - 1] ?? Number.NaN });
      process.stderr.write(`${s.title}: done\n`);
    }
  } finally {
    dir.remove();
  }
  const head = ['scenario (one hop, 127.0.0.1)', 'entries/s', 'receiver peak RSS MiB', 'p50 ms', 'p99 ms', 'max ms'];
  const rows = results.map((r) => [r.title, Math.round(r.entriesPerSec).toLocaleString('en-US'), (r.receiverRss / 1048576).toFixed(1), r.p50.toFixed(2), r.p99.toFixed(2), r.max.toFixed(2)]);
  console.log(`Chain links: ${LINES.toLocaleString('en-US')} entries of ${LINE_BYTES} bytes (file → chain sink → chain source → null, two nodes); latency at ${LATENCY_RATE} entries/s (stdin → chain sink → chain source → stdout)`);
  console.log(markdownTable(head, rows, true));
  const tcp = results.find((r) => r.title === 'tcp_chain')!;
  const tls = results.find((r) => r.title === 'tcp_chain + mutual TLS')!;
  const http = results.find((r) => r.title.startsWith('http_chain'))!;
  console.log(
    markdownTable(
      ['anchor (same input, same run)', 'entries/s', 'peak RSS MiB', 'tcp_chain / anchor', 'mTLS tcp_chain / anchor', 'http_chain / tcp_chain'],
      [
        [
          'rsyslog imfile → omfwd TCP → counter',
          Math.round(anchor.entriesPerSec).toLocaleString('en-US'),
          (anchor.peakRss / 1048576).toFixed(1),
          (tcp.entriesPerSec / anchor.entriesPerSec).toFixed(2),
          (tls.entriesPerSec / anchor.entriesPerSec).toFixed(2),
          (http.entriesPerSec / tcp.entriesPerSec).toFixed(2),
        ],
      ],
      true,
    ),
  );
  return results;
}

runIfMain(import.meta.url, main, { exitWhenDone: true });
