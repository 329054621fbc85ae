// Fleet end to end, run as local processes from compose.yaml and deploy/ (the test topology
// runner): edge → relay-a + relay-b → collector, mutual TLS on every hop.
//  - throughput: lines written at the edge at an offered rate, unique lines at the collector's file
//  - backlog: 300,000 lines written beforehand, renamed into the edge's directory as the clock
//    starts (as bench/chain.ts does for the hop it is compared with), unique lines at the collector
//  - delay: a line's write at the edge to its appearance in the collector's SSE stream (p50, p99)
// Run: npm run build && node dist/bench/fleet.js

import { appendFileSync, closeSync, mkdirSync, mkdtempSync, openSync, readdirSync, readSync, renameSync, rmSync, statSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { setFlagsFromString } from 'node:v8';
import { runInNewContext } from 'node:vm';
import { EventSource } from 'eventsource';
import { type Fleet, startFleet } from '../test/helpers/fleet.js';
import { sleep } from '../test/helpers/node.js';
import { childPids, cpuMs, peakRss, settleDisk } from './proc.js';
import { LINES as HOP_LINES, plainHopRate } from './chain.js';
import { median, medianRun, pct, runIfMain } from './report.js';

/** BENCH_BACKLOG_ONLY=1: only the backlog and its CPU table */
const BACKLOG_ONLY = process.env.BENCH_BACKLOG_ONLY !== undefined;
/** BENCH_HOP=0: no plain tcp_chain hop between the backlog runs (the reference of the fleet's ratio) */
const WITH_HOP = process.env.BENCH_HOP !== '0';
/** backlog runs (BENCH_RUNS, default 3); the median is reported with its CPU table */
const RUNS = Math.max(1, Number(process.env.BENCH_RUNS ?? 3));

/** A full garbage collection of this process now, so none of its own falls in a timed window. */
function collectGarbage(): void {
  setFlagsFromString('--expose-gc');
  (runInNewContext('gc') as () => void)();
}

/** Unique messages with `prefix` in the collector's file sink, each file read on from where the last call stopped. */
const offsets = new Map<string, number>();
const seenBy = new Map<string, Set<string>>();
function uniqueAtCollector(fleet: Fleet, prefix: string): number {
  const dir = fleet.local.dirs.collector!.DATA_DIR!;
  for (const f of readdirSync(dir).filter((x) => x.endsWith('.log'))) {
    const path = join(dir, f);
    const from = offsets.get(path) ?? 0;
    const size = statSync(path).size;
    if (size <= from) continue;
    const buf = Buffer.allocUnsafe(size - from);
    const fd = openSync(path, 'r');
    const n = readSync(fd, buf, 0, buf.length, from);
    closeSync(fd);
    const text = buf.toString('utf8', 0, n);
    const end = text.lastIndexOf('\n') + 1; // whole lines only; the rest is read next time
    offsets.set(path, from + Buffer.byteLength(text.slice(0, end)));
    for (const line of text.slice(0, end).split('\n')) {
      const m = /"message":"([^"]+)"/.exec(line);
      if (!m) continue;
      // every prefix of this bench ends at its first '-'
      const key = m[1]!.slice(0, m[1]!.indexOf('-') + 1);
      let set = seenBy.get(key);
      if (!set) seenBy.set(key, (set = new Set()));
      set.add(m[1]!);
    }
  }
  return seenBy.get(prefix)?.size ?? 0;
}

/** Bytes in the collector's file sink files. */
function collectorBytes(fleet: Fleet): number {
  const dir = fleet.local.dirs.collector!.DATA_DIR!;
  return readdirSync(dir)
    .filter((x) => x.endsWith('.log'))
    .reduce((sum, f) => sum + statSync(join(dir, f)).size, 0);
}

/** Lines containing `marker` in the collector's file sink, each file's new bytes counted once. */
const counted = new Map<string, { offset: number; lines: number }>();
function linesAtCollector(fleet: Fleet, marker: string): number {
  const dir = fleet.local.dirs.collector!.DATA_DIR!;
  const needle = Buffer.from(marker);
  let total = 0;
  for (const f of readdirSync(dir).filter((x) => x.endsWith('.log'))) {
    const path = join(dir, f);
    const c = counted.get(`${marker}\0${path}`) ?? { offset: 0, lines: 0 };
    counted.set(`${marker}\0${path}`, c);
    const size = statSync(path).size;
    if (size > c.offset) {
      const buf = Buffer.allocUnsafe(size - c.offset);
      const fd = openSync(path, 'r');
      const n = readSync(fd, buf, 0, buf.length, c.offset);
      closeSync(fd);
      const end = buf.lastIndexOf(10, n - 1) + 1; // whole lines only
      for (let i = buf.indexOf(needle); i >= 0 && i < end; i = buf.indexOf(needle, i + needle.length)) c.lines++;
      c.offset += end;
    }
    total += c.lines;
  }
  return total;
}

async function throughput(fleet: Fleet, rate: number, total: number): Promise<string[]> {
  const prefix = `tp${rate}-`;
  const file = join(fleet.local.dirs.edge!.APP_LOG_DIR!, `${prefix}.log`);
  const perTick = Math.max(1, Math.round(rate / 100));
  const t0 = performance.now();
  for (let i = 1; i <= total; ) {
    let chunk = '';
    for (let k = 0; k < perTick && i <= total; k++, i++) chunk += `${prefix}${String(i).padStart(7, '0')} ${'x'.repeat(180)}\n`;
    appendFileSync(file, chunk);
    const due = t0 + ((i - 1) / rate) * 1000;
    const wait = due - performance.now();
    if (wait > 0) await sleep(wait);
  }
  let got = 0;
  let last = performance.now();
  const deadline = performance.now() + 60_000;
  while (performance.now() < deadline) {
    const n = uniqueAtCollector(fleet, prefix);
    if (n > got) {
      got = n;
      last = performance.now();
    }
    if (got >= total || performance.now() - last > 3000) break;
    await sleep(100);
  }
  const secs = (last - t0) / 1000;
  return [`${rate}`, `${total}`, `${got}`, `${Math.round(got / secs)}`, secs.toFixed(2)];
}

/** Every process of the fleet by name: each node's primary and its pipeline workers. */
export function fleetProcesses(fleet: Fleet): Map<string, number> {
  const out = new Map<string, number>();
  for (const [name, node] of fleet.nodes) {
    out.set(`${name} primary`, node.child.pid!);
    childPids(node.child.pid!).forEach((pid, i) => out.set(`${name} worker ${i + 1}`, pid));
  }
  return out;
}

/** A backlog of `total` lines written at once into a file the edge tails: seconds until every one is at the collector. */
export async function backlog(fleet: Fleet, total: number, run: number): Promise<{ row: string[]; cpu: string[][]; eps: number }> {
  const procs = fleetProcesses(fleet);
  const prefix = `backlog${run}-`;
  const before = await collectorReceived(fleet);
  const appDir = fleet.local.dirs.edge!.APP_LOG_DIR!;
  // The edge is checked to carry a line end to end before the clock starts.
  appendFileSync(join(appDir, `warm-${run}.log`), `warm-${run}\n`);
  for (const end = performance.now() + 30_000; linesAtCollector(fleet, `"message":"warm-${run}"`) < 1; await sleep(50)) {
    if (performance.now() > end) throw new Error(`backlog run ${run}: the edge did not carry warm-${run} within 30 s`);
  }
  // The backlog arrives as the hop's input does (bench/chain.ts): written beforehand beside the
  // edge's directory, on the same file system, and renamed into it when the clock starts. The
  // edge notices the new name at once (its directory watch) and reads the file whole. Appending
  // 60 MB inside the timed window instead cost this bench ~0.22 s of kernel CPU on the two cores
  // the fleet runs on, which the hop it is compared with never pays.
  const staging = join(appDir, '..', 'backlog-staging');
  mkdirSync(staging, { recursive: true });
  const staged = join(staging, `${prefix}.log`);
  const lineBytes = Buffer.byteLength(`${prefix}0000000 ${'x'.repeat(180)}\n`);
  const bytes = Buffer.allocUnsafe(total * lineBytes);
  for (let i = 1; i <= total; i++) bytes.write(`${prefix}${String(i).padStart(7, '0')} ${'x'.repeat(180)}\n`, (i - 1) * lineBytes);
  writeFileSync(staged, bytes);
  // the pages written so far (the backlog, the runs and hops before) on disk before the clock starts
  settleDisk();
  // the bench's heap collected before the clock starts, so none of its own falls in the window
  collectGarbage();
  const cpu0 = new Map([...procs].map(([k, pid]) => [k, cpuMs(pid)]));
  const self0 = process.cpuUsage();
  const t0 = performance.now();
  renameSync(staged, join(appDir, `${prefix}.log`));
  let got = 0;
  const deadline = t0 + 180_000;
  // Cheap while it runs (the bench shares the two cores with the fleet): only the size of the
  // collector's files is watched; once it has not grown for 300 ms the CPU times are read and the
  // lines counted, and once there are enough every message is checked to be unique. The end is the
  // last growth seen; the CPU figures include the fleet's idle 300 ms after it (a few ms).
  let end = t0;
  let size = 0;
  // CPU figures are read once, when the collector's files have been quiet for 300 ms: reading ten
  // processes' /proc/<pid>/stat at every growth cost this bench more than the fleet's idle 300 ms.
  let self: NodeJS.CpuUsage | undefined;
  const cpu1 = new Map(cpu0);
  while (got < total && performance.now() < deadline) {
    await sleep(20);
    const now = collectorBytes(fleet);
    if (now !== size) {
      size = now;
      end = performance.now();
      self = undefined;
      continue;
    }
    if (performance.now() - end < 300) continue;
    if (!self) {
      self = process.cpuUsage(self0);
      for (const [k, pid] of procs) cpu1.set(k, cpuMs(pid));
    }
    if (linesAtCollector(fleet, `"message":"${prefix}`) < total) continue;
    got = uniqueAtCollector(fleet, prefix);
  }
  self ??= process.cpuUsage(self0);
  const secs = (end - t0) / 1000;
  // per process: CPU s, its share of the run, and µs of CPU per line of the backlog (the figure a
  // shared machine cannot blur: wall-clock rates move with the other load, CPU per line hardly)
  const usPerLine = (ms: number) => ((ms * 1000) / total).toFixed(2);
  const cpuRow = (name: string, ms: number) => [name, (ms / 1000).toFixed(2), `${Math.round((100 * ms) / 1000 / secs)} %`, usPerLine(ms)];
  const cpu = [...procs].map(([k]) => cpuRow(k, cpu1.get(k)! - cpu0.get(k)!));
  const sum = (pick: (name: string) => boolean) => [...procs.keys()].filter(pick).reduce((n, k) => n + cpu1.get(k)! - cpu0.get(k)!, 0);
  cpu.push(cpuRow('all workers', sum((k) => k.includes(' worker '))));
  cpu.push(cpuRow('all primaries', sum((k) => k.endsWith(' primary'))));
  const benchSecs = (self.user + self.system) / 1e6;
  cpu.push(cpuRow('this bench (renames the backlog in, watches the collector files)', benchSecs * 1000));
  // every line once in the file: as many lines with the prefix as unique messages
  const inFile = linesAtCollector(fleet, `"message":"${prefix}`);
  const after = await collectorReceived(fleet);
  const received = after.entries - before.entries;
  const requests = after.requests - before.requests;
  return {
    row: [`${run}`, `${total}`, `${got}`, `${inFile}`, `${received}`, `${requests}`, `${Math.round(received / Math.max(1, requests))}`, `${Math.round(got / secs)}`, secs.toFixed(2), usPerLine(sum((k) => k.includes(' worker ')))],
    cpu,
    eps: got / secs,
  };
}

/** Entries and requests the collector's chain source has taken so far (both relays'), from its /status. */
async function collectorReceived(fleet: Fleet): Promise<{ entries: number; requests: number }> {
  const port = fleet.local.env.collector!.ADMIN_PORT;
  await sleep(1200); // workers report their counters once a second
  const status = (await (await fetch(`http://127.0.0.1:${port}/status`, { signal: AbortSignal.timeout(5000) })).json()) as {
    pipelines: Record<string, { counters: { sources: Record<string, { total_entries: number; total_requests: number }> } }>;
  };
  const sources = Object.values(status.pipelines).flatMap((p) => Object.values(p.counters.sources));
  return { entries: sources.reduce((n, c) => n + c.total_entries, 0), requests: sources.reduce((n, c) => n + c.total_requests, 0) };
}

/** Entries the relays' chain sources took so far, and of them those carried on as their frames, undecoded (`carried_entries`), from their /status. */
async function relaysCarried(fleet: Fleet): Promise<{ entries: number; carried: number }> {
  let entries = 0;
  let carried = 0;
  for (const name of ['relay-a', 'relay-b']) {
    const port = fleet.local.env[name]?.ADMIN_PORT;
    if (!port) continue;
    const status = (await (await fetch(`http://127.0.0.1:${port}/status`, { signal: AbortSignal.timeout(5000) })).json()) as {
      pipelines: Record<string, { counters: { sources: Record<string, { total_entries: number; carried_entries?: number }> } }>;
    };
    for (const c of Object.values(status.pipelines).flatMap((p) => Object.values(p.counters.sources))) {
      entries += c.total_entries;
      carried += c.carried_entries ?? 0;
    }
  }
  return { entries, carried };
}

async function delay(fleet: Fleet, count: number, everyMs: number): Promise<number[]> {
  const port = fleet.local.ports.get('collector:8080')!;
  const written = new Map<string, number>();
  const delays: number[] = [];
  const es = new EventSource(`http://127.0.0.1:${port}/stream`);
  await new Promise<void>((resolve) => es.addEventListener('connected', () => resolve(), { once: true }));
  es.onmessage = (ev) => {
    const m = /"message":"(lat-\d+)"/.exec(String(ev.data));
    const at = m ? written.get(m[1]!) : undefined;
    if (m && at !== undefined) {
      delays.push(performance.now() - at);
      written.delete(m[1]!); // the second relay's copy is not a new arrival
    }
  };
  const file = join(fleet.local.dirs.edge!.APP_LOG_DIR!, 'latency.log');
  for (let i = 0; i < count; i++) {
    const id = `lat-${i}`;
    written.set(id, performance.now());
    appendFileSync(file, `${id}\n`);
    await sleep(everyMs);
  }
  await sleep(2000);
  es.close();
  return delays.sort((a, b) => a - b);
}

function table(head: string[], rows: string[][]): string {
  const w = head.map((h, i) => Math.max(h.length, ...rows.map((r) => r[i]!.length)));
  const fmt = (r: string[]) => r.map((c, i) => c.padStart(w[i]!)).join('  ');
  return [fmt(head), ...rows.map(fmt)].join('\n');
}

export async function main(): Promise<void> {
  const root = mkdtempSync(join(tmpdir(), 'logrelay-bench-fleet-'));
  const fleet = await startFleet(root);
  try {
    if (!BACKLOG_ONLY) {
      const rows: string[][] = [];
      for (const [rate, total] of [
        [10_000, 50_000],
        [20_000, 100_000],
        [40_000, 100_000],
      ] as const) {
        rows.push(await throughput(fleet, rate, total));
      }
      console.log('fleet throughput, 200-byte lines, edge file → 2× tcp_chain (mTLS) → relays → http_chain (mTLS) → collector file sink');
      console.log(table(['offered/s', 'written', 'unique at collector', 'delivered/s', 'seconds'], rows));
    }
    const runs: Awaited<ReturnType<typeof backlog>>[] = [];
    const hops: number[] = [];
    for (let run = 1; run <= RUNS; run++) {
      runs.push(await backlog(fleet, Number(process.env.BENCH_BACKLOG ?? 300_000), run));
      // the reference, between the fleet's runs (the fleet idles meanwhile): one plain tcp_chain hop
      if (WITH_HOP) hops.push(await plainHopRate());
    }
    const mid = medianRun(runs, (r) => r.eps);
    // collectorReceived waited for the counters of the last second
    const relays = await relaysCarried(fleet);
    console.log(`\nbacklog of ${Number(process.env.BENCH_BACKLOG ?? 300_000)} lines renamed into the edge's directory at once, as the hop's input is (the shipped edge: fanout balance, dedup collector: every line exactly once); ${RUNS} runs, median ${Math.round(mid.eps)} unique lines/s`);
    if (WITH_HOP) {
      const hop = median(hops);
      const pairs = runs.map((r, i) => (r.eps / hops[i]!).toFixed(2)).join(', ');
      console.log(`plain tcp_chain hop (bench/chain.js, ${HOP_LINES.toLocaleString('en-US')} lines of 200 B, a run after each fleet run): median ${Math.round(hop)} lines/s (${hops.map((h) => Math.round(h)).join(', ')})`);
      console.log(`fleet / hop: ${(mid.eps / hop).toFixed(2)} × (medians; each run's pair: ${pairs} ×)`);
    }
    console.log(table(['run', 'lines', 'unique at collector', "lines in the collector's file", 'received by the collector (both relays)', 'requests', 'lines/request', 'unique lines/s', 'seconds', 'workers CPU µs/line'], runs.map((r) => r.row)));
    console.log(`relays (both, whole bench): ${relays.entries} entries received, ${relays.carried} of them carried on as their frames, undecoded (carried_entries)`);
    // peak RSS (VmHWM) of each process since it started: over every run so far, the warm-up included
    const procs = fleetProcesses(fleet);
    const rss = (name: string) => (procs.has(name) ? (peakRss(procs.get(name)!) / 1024 / 1024).toFixed(1) : '');
    console.log('\nCPU during the median backlog run (user + system of all its threads; 200 % = both cores; µs per backlog line); peak RSS of each process over the whole bench');
    console.log(table(['process', 'CPU s', 'share of the run', 'CPU µs/line', 'peak RSS MiB'], mid.cpu.map((row) => [...row, rss(row[0]!)])));
    // every run's µs per line by process: where the first run (fresh processes) pays more
    console.log('\nCPU µs per backlog line of each process, by run');
    console.log(table(['process', ...runs.map((_, i) => `run ${i + 1}`)], mid.cpu.map((row, j) => [row[0]!, ...runs.map((r) => r.cpu[j]![3]!)])));
    if (BACKLOG_ONLY) return;
    const rows2: string[][] = [];
    for (const [count, everyMs, label] of [
      [300, 20, '50 lines/s'],
      [3000, 1, '1,000 lines/s'],
    ] as const) {
      const d = await delay(fleet, count, everyMs);
      rows2.push([label, `${d.length}`, pct(d, 50).toFixed(1), pct(d, 99).toFixed(1), (d.at(-1) ?? Number.NaN).toFixed(1)]);
    }
    console.log('\nwrite at the edge → collector SSE stream (the file source wakes on fs.watch; the 100 ms poll is the floor for missed events)');
    console.log(table(['rate', 'samples', 'p50 ms', 'p99 ms', 'max ms'], rows2));
  } finally {
    await fleet.stopAll();
    rmSync(root, { recursive: true, force: true });
  }
}

runIfMain(import.meta.url, main, { exitWhenDone: true });
