// Memory: the resident set (RSS) of every process, primary and pipeline workers, where a node
// spends its life: idle, and through the compose fleet's backlog.
//  - idle edge: a node with one file pipeline (file source → tcp_chain sink to a receiving node,
//    the link up), VmRSS of its primary and its worker 5 s after start and once idle, BENCH_IDLE_MS
//    (default 30 s) after: V8's memory reducer gives back the start's young generation and
//    garbage only after 8 s without a collection (its start delay) and a few collections more
//  - fleet: every node of compose.yaml (bench/fleet.ts runs them), VmRSS of each process idle
//    (BENCH_IDLE_MS after the start), then its peak (VmHWM) after BENCH_RUNS (3) backlogs of
//    BENCH_BACKLOG lines (default 300,000 of 200 bytes) renamed into the edge's directory, as
//    bench/fleet.js runs them, with the median run's rate beside it
// LOGRELAY_NODE_FLAGS (e.g. `--max-semi-space-size=16`) runs every node with those V8 flags, to
// weigh a flag's memory against its entries/s and each process's CPU seconds over the backlog.
// BENCH_BREAKDOWN=1: every fleet process also reports what it held at its RSS peak
// (bench/mem-sampler.ts: JS heap used, young and old generation committed, external, Buffers).
// Figures on a shared machine are noisy.
// Run: npm run build && node dist/bench/memory.js   (BENCH_ONLY=idle or BENCH_ONLY=fleet: one part)

import { existsSync, mkdirSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { chainSinkToml, chainSourceToml } from '../test/helpers/chain.js';
import { startFleet } from '../test/helpers/fleet.js';
import { freePort, type RunningNode, spawnNode, waitReady } from '../test/helpers/node.js';
import { backlog, fleetProcesses } from './fleet.js';
import type { MemorySample } from './mem-sampler.js';
import { childPids, peakRss, sleep, statusBytes, until } from './proc.js';
import { medianRun, rate, runIfMain, textTable } from './report.js';

const IDLE_MS = Number(process.env.BENCH_IDLE_MS ?? 30_000);
/** the early sample of the idle edge, ms after its start */
const EARLY_MS = 5000;
const BACKLOG = Number(process.env.BENCH_BACKLOG ?? 300_000);
/** backlog runs through the fleet (BENCH_RUNS, default 3, as bench/fleet.js): peaks over all, CPU of the median */
const RUNS = Math.max(1, Number(process.env.BENCH_RUNS ?? 3));
const ONLY = process.env.BENCH_ONLY;
const BREAKDOWN = process.env.BENCH_BREAKDOWN === '1';
const MiB = 1024 * 1024;

/** The goals, MiB, by the process's role (issue 43 goal 4); the idle edge's is for primary and worker together. */
const GOALS: Readonly<Record<string, { idle?: number; peak?: number }>> = {
  primary: { idle: 64, peak: 80 },
  'edge worker': { peak: 128 },
  'collector worker': { peak: 160 },
};

const mib = (bytes: number): string => (bytes / MiB).toFixed(1);

/** A row: process, idle RSS, peak RSS or the early sample, and the goals that apply to it. */
function row(name: string, idle: number, peak: number | undefined, early?: number): string[] {
  const role = name.endsWith('primary') ? 'primary' : name.startsWith('edge worker') ? 'edge worker' : name.startsWith('collector worker') ? 'collector worker' : '';
  const goal = GOALS[role];
  const goals = [goal?.idle === undefined ? '' : `idle ≤ ${goal.idle}`, goal?.peak === undefined || peak === undefined ? '' : `peak ≤ ${goal.peak}`];
  const text = goals.filter(Boolean).join(', ');
  return [name, ...(early === undefined ? [] : [mib(early)]), mib(idle), peak === undefined ? '' : mib(peak), text];
}

/** A node on `toml`, started and ready (its pipelines built and started). */
async function startNode(dir: string, name: string, toml: string): Promise<RunningNode> {
  const file = join(dir, `${name}.toml`);
  writeFileSync(file, toml);
  const node = spawnNode(['-c', file]);
  await waitReady(node, name, 30_000);
  return node;
}

/** The idle edge: primary and worker VmRSS once it has idled IDLE_MS with its link up. */
async function idleEdge(): Promise<string[][]> {
  const dir = mkdtempSync(join(tmpdir(), 'logrelay-bench-memory-'));
  const logs = join(dir, 'logs');
  mkdirSync(logs);
  writeFileSync(join(logs, 'app.log'), '');
  const port = await freePort();
  const nodes: RunningNode[] = [];
  try {
    nodes.push(await startNode(dir, 'receiver', `[[pipelines]]\nname = "recv"\n${chainSourceToml('in', 'tcp_chain', port)}[[pipelines.plugin_sinks]]\nid = "out"\ntype = "null"\n`));
    const edge = await startNode(
      dir,
      'edge',
      `node_name = "edge"\ndata_dir = "${join(dir, 'state')}"\n[[pipelines]]\nname = "app"\n[[pipelines.plugin_sources]]\nid = "app"\ntype = "file"\n[pipelines.plugin_sources.config]\ndirectory = "${logs}"\npattern = "*.log"\n${chainSinkToml('up', 'tcp_chain', port, 'edge')}`,
    );
    nodes.push(edge);
    await until(() => edge.records.some((r) => r.msg === 'Chain link up'), 'the edge link up', 30_000, 50);
    const primary = edge.child.pid!;
    const [worker] = childPids(primary);
    if (worker === undefined) throw new Error('the edge has no worker');
    const rss = () => [statusBytes(primary, 'VmRSS'), statusBytes(worker, 'VmRSS')] as const;
    await sleep(EARLY_MS);
    const [p0, w0] = rss();
    await sleep(IDLE_MS - EARLY_MS);
    const [p, w] = rss();
    const [pp, pw] = [statusBytes(primary, 'RssAnon'), statusBytes(worker, 'RssAnon')];
    // the pages of files both map (the node binary, its libraries) once: the larger of the two sets
    const files = Math.max(statusBytes(primary, 'RssFile'), statusBytes(worker, 'RssFile'));
    return [
      [...row('idle edge primary', p, peakRss(primary), p0), mib(pp), ''],
      [...row('idle edge worker', w, peakRss(worker), w0), mib(pw), ''],
      ['idle edge, primary + worker', mib(p0 + w0), mib(p + w), '', 'idle ≤ 100', mib(pp + pw), mib(pp + pw + files)],
    ];
  } finally {
    for (const n of nodes.reverse()) await n.stop(15_000).catch(() => undefined);
    rmSync(dir, { recursive: true, force: true });
  }
}

/** What each process held at its RSS peak (BENCH_BREAKDOWN), read from the samplers' files in `dir`. */
function breakdownRows(procs: ReadonlyMap<string, number>, dir: string): string[][] {
  const rows: string[][] = [];
  for (const [name, pid] of procs) {
    const file = join(dir, `${pid}.json`);
    if (!existsSync(file)) continue;
    const s = JSON.parse(readFileSync(file, 'utf8')) as MemorySample;
    const heap = s.young + s.old;
    rows.push([name, mib(s.rss), mib(s.heapUsed), mib(s.young), mib(s.old), mib(s.external), mib(s.arrayBuffers), mib(s.rss - heap - s.external)]);
  }
  return rows;
}

/** Every process of the fleet: VmRSS after an idle start, VmHWM after the backlog. */
async function fleetBacklog(): Promise<{ rows: string[][]; eps: number; breakdown: string[][] }> {
  const root = mkdtempSync(join(tmpdir(), 'logrelay-bench-memory-fleet-'));
  const samples = join(root, 'samples');
  const nodeOptions = process.env.NODE_OPTIONS;
  if (BREAKDOWN) {
    mkdirSync(samples);
    // the nodes get the bench's environment: each of their processes loads the sampler
    process.env.LOGRELAY_MEM_SAMPLE_DIR = samples;
    process.env.NODE_OPTIONS = `${nodeOptions ?? ''} --import=${fileURLToPath(new URL('./mem-sampler.js', import.meta.url))}`.trim();
  }
  try {
    const fleet = await startFleet(root);
    try {
      await sleep(IDLE_MS);
      const procs = fleetProcesses(fleet);
      const idle = new Map([...procs].map(([name, pid]) => [name, statusBytes(pid, 'VmRSS')]));
      // as bench/fleet.js runs it: the first run finds the nodes' code cold, the later ones run
      // faster, and a faster backlog holds more at once; the peak is over every run
      const runs: Awaited<ReturnType<typeof backlog>>[] = [];
      for (let i = 1; i <= RUNS; i++) runs.push(await backlog(fleet, BACKLOG, i));
      const run = medianRun(runs, (r) => r.eps);
      // CPU seconds of each process over the median backlog run (all its threads: the garbage
      // collector's too), the cost a V8 flag trades for memory, less noisy than the rate on a shared machine
      const cpu = new Map(run.cpu.map(([name, secs]) => [name!, secs!]));
      const rows = [...procs].map(([name, pid]) => [...row(name, idle.get(name)!, peakRss(pid)), cpu.get(name) ?? '']);
      // the samplers write once a second
      if (BREAKDOWN) await sleep(1500);
      return { rows, eps: run.eps, breakdown: BREAKDOWN ? breakdownRows(procs, samples) : [] };
    } finally {
      await fleet.stopAll().catch(() => undefined);
    }
  } finally {
    if (BREAKDOWN) {
      delete process.env.LOGRELAY_MEM_SAMPLE_DIR;
      if (nodeOptions === undefined) delete process.env.NODE_OPTIONS;
      else process.env.NODE_OPTIONS = nodeOptions;
    }
    rmSync(root, { recursive: true, force: true });
  }
}

export async function main(): Promise<void> {
  const flags = process.env.LOGRELAY_NODE_FLAGS ? ` (node flags: ${process.env.LOGRELAY_NODE_FLAGS})` : '';
  const head = ['process', 'idle RSS MiB', 'peak RSS MiB', 'goal MiB'];
  if (ONLY !== 'fleet') {
    console.log(`idle edge: one file pipeline, file → tcp_chain (link up); RSS ${EARLY_MS / 1000} s after start and once idle (${IDLE_MS / 1000} s)${flags}`);
    console.log(textTable(['process', `RSS at ${EARLY_MS / 1000} s MiB`, 'idle RSS MiB', 'peak RSS MiB', 'goal MiB', 'idle RssAnon MiB', 'idle, file pages once MiB'], await idleEdge()));
    console.log("RssAnon: each process's own memory (heap, stacks, buffers), without the pages of the node binary and libraries that RSS counts whole in each");
    console.log(`file pages once: both RssAnon and the larger RssFile, the two processes' memory with the pages of the files both map (the node binary, ${process.version}) counted once, about as a container's memory cgroup charges them (a page of a file once, to the group that read it first)`);
  }
  if (ONLY !== 'idle') {
    const { rows, eps, breakdown } = await fleetBacklog();
    console.log(`\ncompose fleet: idle RSS ${IDLE_MS / 1000} s after start; peak RSS (since start) over ${RUNS} backlogs of ${rate(BACKLOG)} lines at the edge, delivered at ${rate(eps)} unique lines/s (median run)${flags}`);
    console.log(textTable([...head, 'CPU s in the backlog'], rows));
    if (breakdown.length > 0) {
      console.log('\nwhat each process held at its RSS peak, MiB (heap committed: young = both semi-spaces; old = old, code and large objects)');
      console.log(textTable(['process', 'RSS', 'JS heap used', 'young committed', 'old committed', 'external', 'of it Buffers', 'rest (binary, code, malloc)'], breakdown));
    }
  }
}

runIfMain(import.meta.url, main, { exitWhenDone: true });
