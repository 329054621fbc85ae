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
// its default batching (flush_interval_ms = 1000; its runs print the requests the receiver took,
// since each costs both ends more than an entry does; BENCH_HTTP_SINK adds sink keys, e.g.
// `max_batch_count = 100;max_in_flight = 1`, to see what a request costs), and tcp_chain into a receiver with dedup on
// (window 100,000: the 1,000,000 distinct ids of the run pass through it, so the receiver
// worker's peak RSS shows the window's bound). Every step has a deadline. The 1-minute load
// average before each run is printed; BENCH_QUIET_LOAD=0.5 waits for it to fall below 0.5 first
// (the quiet-machine comparison with rsyslog), at most BENCH_QUIET_WAIT_MS per run. Anchors (see
// bench/rsyslog.ts), interleaved with the scenarios: the two-daemon rsyslog hop (imfile → omfwd →
// imptcp → omfwd → counter, no metadata), like for like with a logrelay hop, and the single
// daemon imfile → omfwd → counter; each with its daemons' CPU per line beside the workers'. Node reports
// (the fleet view): the plain tcp_chain hop with both nodes reporting every second against the
// same hop with reports off, in the same runs (`BENCH_ONLY=reports` runs just those two).

import { mkdirSync, renameSync } from 'node:fs';
import { performance } from 'node:perf_hooks';
import { chainSinkToml, chainSourceToml, tlsBlock } from '../test/helpers/chain.js';
import { freePort, type RunningNode, spawnNode, tempDir, waitFor, waitReady } from '../test/helpers/node.js';
import { makePki, type Pki } from '../test/helpers/pki.js';
import { latestStatus } from '../test/helpers/status.js';
import { writeInput } from './input.js';
import { childPids, cpuSplitMs, peakRss, readEnd, settleDisk, threadCpuMs, until } from './proc.js';
import { type ForwardResult, rsyslogForward, rsyslogHop } from './rsyslog.js';
import { loadRange, markdownTable, median, medianRun, pct, quietLoad, rate, runIfMain, spread } from './report.js';

/** lines of each throughput run (BENCH_LINES), the plain hop other benches compare with too */
export const LINES = Number(process.env.BENCH_LINES ?? 1_000_000);
const LINE_BYTES = 200;
const LATENCY_ENTRIES = Number(process.env.BENCH_LATENCY_ENTRIES ?? 3000);
const LATENCY_RATE = 1000;
const WARMUP = 200;
const THROUGHPUT_DEADLINE_MS = 180_000;
/** throughput runs per scenario (and of the rsyslog anchor), interleaved; the median is reported */
const RUNS = Math.max(1, Number(process.env.BENCH_RUNS ?? 3));
/** only these scenarios (see only()), and the anchor unless it is excluded by BENCH_NO_ANCHOR */
const ONLY = process.env.BENCH_ONLY;

/**
 * BENCH_ONLY is a comma-separated list; a part names the scenario whose title it is, or else every
 * one whose title contains it (`tcp_chain,http` runs the plain tcp_chain and the http_chain ones).
 */
function only(list: string, title: string): boolean {
  return list.split(',').some((part) => (SCENARIOS.some((s) => s.title === part) ? title === part : title.includes(part)));
}
const WITH_ANCHOR = process.env.BENCH_NO_ANCHOR === undefined;
/**
 * BENCH_HOP_WARM=<lines>: each throughput run's nodes first carry this many lines, untimed, so the
 * timed lines find their code compiled (a hop in its steady state, as a fleet that has run a while
 * is); by default the timed lines are the first the fresh pair carries.
 */
const HOP_WARM = Math.max(0, Number(process.env.BENCH_HOP_WARM ?? 0));
/** BENCH_HTTP_SINK: extra config lines of the http_chain sink (`max_in_flight = 1;flush_interval_ms = 50`), `;` between them */
const HTTP_SINK_KEYS = (process.env.BENCH_HTTP_SINK ?? '').split(';').filter(Boolean).map((l) => `${l.trim()}\n`).join('');

type Link = 'tcp_chain' | 'http_chain';

interface Scenario {
  readonly title: string;
  readonly link: Link;
  readonly tls: boolean;
  /** the receiver suppresses duplicates (DESIGN.md §14) */
  readonly dedup?: boolean;
  /** `report_interval_ms` of both nodes (node reports, the fleet view); absent: the default */
  readonly reportMs?: number;
  /** the sink's `compression` (bench/compression.ts); the sender then reports its byte counters */
  readonly compression?: string;
}

const SCENARIOS: readonly Scenario[] = [
  { title: 'tcp_chain', link: 'tcp_chain', tls: false },
  { title: 'tcp_chain + mutual TLS', link: 'tcp_chain', tls: true },
  { title: 'http_chain (default batching)', link: 'http_chain', tls: false },
  { title: 'tcp_chain → dedup (window 100,000)', link: 'tcp_chain', tls: false, dedup: true },
  { title: 'tcp_chain, reports every 1 s', link: 'tcp_chain', tls: false, reportMs: 1000 },
  { title: 'tcp_chain, reports off', link: 'tcp_chain', tls: false, reportMs: 0 },
];

/** The top-level key of a scenario's nodes, before their tables. */
const reportKey = (s: Scenario): string => (s.reportMs === undefined ? '' : `report_interval_ms = ${s.reportMs}\n`);

interface Result {
  readonly title: string;
  readonly entriesPerSec: number;
  /** the receiving worker's peak RSS during the throughput run, bytes */
  readonly receiverRss: number;
  /** the sending worker's peak RSS, bytes */
  readonly senderRss: number;
  /** worker CPU per entry of the run with the median rate, µs: sender, receiver */
  readonly cpuPerLine: readonly [number, number];
  readonly p50: number;
  readonly p99: number;
  readonly max: number;
}

function receiverToml(s: Scenario, port: number, pki: Pki | undefined, sink: 'null' | 'stdout'): string {
  const tls = s.tls && pki ? tlsBlock('pipelines.plugin_sources.config', { cert_file: pki.cert('relay'), key_file: pki.key('relay'), client_ca_file: pki.ca }) : '';
  return `
${reportKey(s)}status_interval_ms = 100
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
  return `${s.compression ? 'status_interval_ms = 100\n' : ''}
${reportKey(s)}[[pipelines]]
name = "a"
[[pipelines.plugin_sources]]
${source}
${chainSinkToml('link', s.link, port, 'edge', `on_full = "block"\n${s.compression ? `compression = "${s.compression}"\n` : ''}${s.link === 'http_chain' ? HTTP_SINK_KEYS : ''}${tls}`)}
`;
}

const processedAtB = (node: RunningNode): number => Number(latestStatus(node, 'b')?.['sinks.out.total_processed'] ?? 0);

async function pair(s: Scenario, pki: Pki | undefined, dir: ReturnType<typeof tempDir>, sink: 'null' | 'stdout', watch?: string) {
  const port = await freePort();
  const b = spawnNode(['-c', dir.file(`b-${sink}.toml`, receiverToml(s, port, pki, sink)), '--logging.level=debug']);
  const a = spawnNode(['-c', dir.file(`a-${sink}.toml`, senderToml(s, port, pki, watch)), ...(s.compression ? ['--logging.level=debug'] : [])], { stdin: watch ? 'ignore' : 'pipe' });
  try {
    await Promise.all([waitReady(b, 'receiver'), waitReady(a, 'sender')]);
  } catch (err) {
    await Promise.all([a.stop(5000), b.stop(5000)]);
    throw err;
  }
  return { a, b };
}

/** One throughput run: the file `input` (LINES lines, or `lines`) through the hop of `s`. */
export async function throughput(
  s: Scenario,
  pki: Pki | undefined,
  dir: ReturnType<typeof tempDir>,
  input: string,
  n: number,
  lines = LINES,
): Promise<{ eps: number; rss: number; senderRss: number; cpu: string; cpuMs: [sender: number, receiver: number]; bytesSent: number; bytesRaw: number }> {
  const watch = `${dir.path}/watch-${n}`;
  mkdirSync(watch);
  const { a, b } = await pair(s, pki, dir, 'null', watch);
  try {
    // the end: when the receiving worker had read what it took (readEnd)
    const worker = childPids(b.child.pid!)[0];
    if (worker === undefined) throw new Error(`${s.title}: the receiver has no worker`);
    const sender = childPids(a.child.pid!)[0] ?? 0;
    if (HOP_WARM > 0) {
      // the byte counters below would count the warm-up's lines too
      if (s.compression) throw new Error(`${s.title}: BENCH_HOP_WARM is for the rates of uncompressed links`);
      writeInput(`${watch}/warm.log`, HOP_WARM, LINE_BYTES);
      await until(() => processedAtB(b) >= HOP_WARM, `${s.title}: the warm-up's ${HOP_WARM} entries at the receiver`, THROUGHPUT_DEADLINE_MS, 20);
    }
    settleDisk();
    const cpu0 = [cpuSplitMs(sender), cpuSplitMs(worker)];
    const threads0 = [threadCpuMs(sender), threadCpuMs(worker)];
    const t0 = performance.now();
    renameSync(input, `${watch}/app.log`);
    const t1 = await readEnd(worker, () => processedAtB(b) >= HOP_WARM + lines, () => `${s.title}: ${processedAtB(b) - HOP_WARM} of ${lines} entries at the receiver`, THROUGHPUT_DEADLINE_MS);
    // the workers' CPU time over the run (all their threads), for where a run's time goes
    const used = (pid: number, before: [number, number]) => {
      const [u, k] = cpuSplitMs(pid);
      return `${((u - before[0]) / 1000).toFixed(2)} + ${((k - before[1]) / 1000).toFixed(2)}`;
    };
    const total = (pid: number, before: [number, number]) => cpuSplitMs(pid).reduce((sum, ms, i) => sum + ms - before[i]!, 0);
    const cpuMs: [number, number] = [total(sender, cpu0[0]!), total(worker, cpu0[1]!)];
    let cpu = `CPU s, user + system: sender worker ${used(sender, cpu0[0]!)}, receiver worker ${used(worker, cpu0[1]!)}; µs/line ${perLine(cpuMs[0], lines)} + ${perLine(cpuMs[1], lines)}`;
    // http_chain: the requests the receiver took (each costs both ends in Node's HTTP stack)
    if (s.link === 'http_chain') {
      const requests = Number(latestStatus(b, 'b')?.['sources.link.total_requests'] ?? 0);
      if (requests > 0) cpu += `; ${requests.toLocaleString('en-US')} requests, ${Math.round(lines / requests)} entries each`;
    }
    // BENCH_THREADS: each worker's CPU by thread (the event loop is "node"; GC helpers, libuv's pool)
    if (process.env.BENCH_THREADS) {
      const byThread = (pid: number, before: Map<string, number>) =>
        [...threadCpuMs(pid)].map(([name, ms]) => `${name} ${((ms - (before.get(name) ?? 0)) / 1000).toFixed(2)}`).join(', ');
      cpu += `; sender threads: ${byThread(sender, threads0[0]!)}; receiver threads: ${byThread(worker, threads0[1]!)}`;
    }
    const eps = lines / ((t1 - t0) / 1000);
    const rss = Math.max(0, ...childPids(b.child.pid!).map(peakRss));
    const senderRss = Math.max(0, ...childPids(a.child.pid!).map(peakRss));
    renameSync(`${watch}/app.log`, input);
    // the sender's byte counters (reported when it runs at debug: compression scenarios)
    let bytesSent = 0;
    let bytesRaw = 0;
    if (s.compression) {
      const st = await waitFor(() => {
        const r = latestStatus(a, 'a');
        return r && Number(r['sinks.link.total_processed']) >= lines && Number(r['sinks.link.unacked'] ?? 0) === 0 ? r : undefined;
      }, `${s.title}: the sender's byte counters`);
      bytesSent = Number(st['sinks.link.bytes_sent']);
      bytesRaw = Number(st['sinks.link.bytes_raw']);
    }
    return { eps, rss, senderRss, cpu, cpuMs, bytesSent, bytesRaw };
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


/**
 * One plain tcp_chain hop (file → tcp_chain sink → tcp_chain source → null), timed as main() times
 * it, on LINES lines: the reference other benches compare with (the fleet bench runs it between
 * its own runs). Entries per second.
 */
export async function plainHopRate(): Promise<number> {
  const dir = tempDir('logrelay-bench-hop-');
  try {
    const input = `${dir.path}/input.log`;
    writeInput(input, LINES, LINE_BYTES);
    return (await throughput(SCENARIOS[0]!, undefined, dir, input, 0)).eps;
  } finally {
    dir.remove();
  }
}

/** CPU per line, µs, as the tables print it. */
const perLine = (ms: number, lines: number): string => ((ms * 1000) / lines).toFixed(2);

/** The anchors, in the order they run and are printed: the like-for-like hop first. */
const ANCHORS = [
  { title: 'rsyslog hop: imfile → omfwd → imptcp → omfwd → counter (2 daemons, no metadata)', run: rsyslogHop },
  { title: 'rsyslog imfile → omfwd TCP → counter (1 daemon, default metadata)', run: rsyslogForward },
] as const;

export async function main(): Promise<Result[]> {
  const dir = tempDir('logrelay-bench-chain-');
  const scenarios = SCENARIOS.filter((s) => ONLY === undefined || only(ONLY, s.title));
  const runs = new Map<Scenario, { eps: number[]; cpuMs: [number, number][]; rss: number; senderRss: number }>(scenarios.map((s) => [s, { eps: [], cpuMs: [], rss: 0, senderRss: 0 }]));
  const anchorRuns: ForwardResult[][] = ANCHORS.map(() => []);
  const results: Result[] = [];
  /** the 1-minute load average before each timed run (BENCH_QUIET_LOAD waits for it to fall below) */
  const loads: number[] = [];
  const loadBefore = async () => {
    loads.push(await quietLoad());
    return `load ${loads.at(-1)!.toFixed(2)}`;
  };
  try {
    const pki = makePki(`${dir.path}/pki`, ['relay', 'edge']);
    const input = `${dir.path}/input.log`;
    writeInput(input, LINES, LINE_BYTES);
    // Interleaved: the anchors, every scenario, again; a slow phase of the machine hits all alike.
    for (let run = 0; run < RUNS; run++) {
      if (WITH_ANCHOR) {
        for (const [i, anchor] of ANCHORS.entries()) {
          const load = await loadBefore();
          const r = await anchor.run(dir.path, input, LINES, THROUGHPUT_DEADLINE_MS);
          anchorRuns[i]!.push(r);
          process.stderr.write(`run ${run + 1} (${load}): ${anchor.title} ${rate(r.entriesPerSec)}/s (CPU of the daemons ${(r.cpuMs / 1000).toFixed(2)} s, µs/line ${perLine(r.cpuMs, LINES)})\n`);
        }
      }
      for (const [n, s] of scenarios.entries()) {
        const load = await loadBefore();
        const { eps, rss, senderRss, cpu, cpuMs } = await throughput(s, pki, dir, input, run * 100 + n);
        const r = runs.get(s)!;
        r.eps.push(eps);
        r.cpuMs.push(cpuMs);
        r.rss = Math.max(r.rss, rss);
        r.senderRss = Math.max(r.senderRss, senderRss);
        process.stderr.write(`run ${run + 1} (${load}): ${s.title} ${rate(eps)}/s (${cpu})\n`);
      }
    }
    for (const s of scenarios) {
      const d = LATENCY_ENTRIES > 0 ? await latency(s, pki, dir) : [];
      const r = runs.get(s)!;
      const mid = medianRun([...r.eps.keys()], (i) => r.eps[i]!);
      const [senderMs, receiverMs] = r.cpuMs[mid]!;
      results.push({
        title: s.title,
        entriesPerSec: median(r.eps),
        receiverRss: r.rss,
        senderRss: r.senderRss,
        cpuPerLine: [(senderMs * 1000) / LINES, (receiverMs * 1000) / LINES],
        p50: pct(d, 50),
        p99: pct(d, 99),
        max: d[d.length - 1] ?? Number.NaN,
      });
    }
  } finally {
    dir.remove();
  }
  const head = ['scenario (one hop, 127.0.0.1)', `entries/s (median of ${RUNS})`, 'runs', 'worker CPU µs/line (sender + receiver)', 'sender peak RSS MiB', 'receiver peak RSS MiB', 'p50 ms', 'p99 ms', 'max ms'];
  const rows = results.map((r) => {
    const s = scenarios.find((x) => x.title === r.title)!;
    const [send, recv] = r.cpuPerLine;
    return [r.title, rate(r.entriesPerSec), spread(runs.get(s)!.eps), `${(send + recv).toFixed(2)} (${send.toFixed(2)} + ${recv.toFixed(2)})`, (r.senderRss / 1048576).toFixed(1), (r.receiverRss / 1048576).toFixed(1), r.p50.toFixed(2), r.p99.toFixed(2), r.max.toFixed(2)];
  });
  console.log(`Chain links: ${LINES.toLocaleString('en-US')} entries of ${LINE_BYTES} bytes (file → chain sink → chain source → null, two nodes); latency at ${LATENCY_RATE} entries/s (stdin → chain sink → chain source → stdout)`);
  console.log(markdownTable(head, rows, true));
  const eps = (title: string) => results.find((r) => r.title === title)?.entriesPerSec ?? Number.NaN;
  const tcp = eps('tcp_chain');
  const ratio = (x: number, y: number) => (Number.isFinite(x / y) ? (x / y).toFixed(2) : '–');
  console.log(
    markdownTable(
      ['anchor (same input, same runs)', `entries/s (median of ${RUNS})`, 'runs', 'daemons CPU µs/line', 'peak RSS MiB', 'tcp_chain / anchor', 'mTLS tcp_chain / anchor'],
      ANCHORS.map((a, i) => {
        const ar = anchorRuns[i]!;
        if (ar.length === 0) return [a.title, '–', '', '–', '–', '–', '–'];
        const anchor = median(ar.map((x) => x.entriesPerSec));
        const mid = medianRun(ar, (x) => x.entriesPerSec);
        return [a.title, rate(anchor), spread(ar.map((x) => x.entriesPerSec)), perLine(mid.cpuMs, LINES), (Math.max(...ar.map((x) => x.peakRss)) / 1048576).toFixed(1), ratio(tcp, anchor), ratio(eps('tcp_chain + mutual TLS'), anchor)];
      }),
      true,
    ),
  );
  console.log(
    `http_chain / tcp_chain ${ratio(eps('http_chain (default batching)'), tcp)}; mTLS tcp_chain / tcp_chain ${ratio(eps('tcp_chain + mutual TLS'), tcp)}; load (1 min) before runs ${loadRange(loads)}`,
  );
  const reporting = eps('tcp_chain, reports every 1 s');
  const silent = eps('tcp_chain, reports off');
  if (Number.isFinite(reporting) || Number.isFinite(silent)) console.log(`node reports every 1 s / reports off, same runs: ${ratio(reporting, silent)}`);
  return results;
}

runIfMain(import.meta.url, main, { exitWhenDone: true });
