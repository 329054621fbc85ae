// Disk buffer bench (DESIGN.md §23), one run, all on 127.0.0.1:
//
//   1. syslog tcp source, memory buffer → null        (the baseline)
//   2. syslog tcp source, disk buffer   → null        (goal ≥ 0.5 × 1): syncs/s, entries per sync
//   3. http_chain source, disk buffer, its http_chain sink's collector down: a backlog of
//      BENCH_BACKLOG entries (1,000,000) of BENCH_ENTRY_BYTES (1000: about 1 GB on disk) POSTed
//      in batches of 1000, four requests at a time, each answered 204 once durable; the relay
//      worker's peak RSS while the backlog sits on disk; then the collector (→ null) comes up,
//      the backlog drains and the segments are deleted.
//   4. the same http_chain source with a memory buffer into a collector that is up (→ null):
//      its normal speed, for 3's "near its normal speed".
//
// The syslog sender is the bench itself: BENCH_LINES (500,000) RFC 5424 lines of 200 bytes, prepared
// beforehand, written to one connection honouring `drain`. A scenario ends when the null sink
// counted every entry; workers report counters once a second, too coarse for a run of a second or
// two, so the end is taken as the last moment the worker's main thread worked (see workEnd).
// Peak RSS is the pipeline worker's VmHWM.
//
// Scenarios 1 and 2 run BENCH_RUNS (3) times, in pairs, and the table has each one's median run.
//
//   node dist/bench/buffer.js          BENCH_LINES, BENCH_BACKLOG, BENCH_ENTRY_BYTES, BENCH_RUNS narrow it;
//                                      BENCH_BACKLOG=0 runs 1 and 2 only

import { spawnSync } from 'node:child_process';
import { readdirSync, readFileSync, rmSync } from 'node:fs';
import { connect } from 'node:net';
import { join } from 'node:path';
import { performance } from 'node:perf_hooks';
import { segmentSeq } from '../src/buffer/record.js';
import { postLines } from '../test/helpers/buffer-node.js';
import { freePort, type RunningNode, sleep, spawnNode, tempDir, type TempDir, waitFor, waitReady } from '../test/helpers/node.js';
import { latestStatus } from '../test/helpers/status.js';
import { localPluginToml, sinkToml } from '../test/helpers/toml.js';
import { childPids, peakRss } from './proc.js';
import { markdownTable, medianRun, runIfMain } from './report.js';

const LINES = Number(process.env.BENCH_LINES ?? 500_000);
const BACKLOG = Number(process.env.BENCH_BACKLOG ?? 1_000_000);
const ENTRY_BYTES = Number(process.env.BENCH_ENTRY_BYTES ?? 1000);
/** Pairs of syslog runs (memory, disk); the table has the medians. */
const RUNS = Math.max(1, Number(process.env.BENCH_RUNS ?? 3));
const DEADLINE_MS = 600_000;
const MiB = 1024 * 1024;

interface Row {
  readonly title: string;
  readonly entries: number;
  readonly ms: number;
  readonly rss: number;
  readonly note: string;
}

const counter = (node: RunningNode, pipeline: string, key: string) => Number(latestStatus(node, pipeline)?.[key] ?? 0);

async function workerOf(node: RunningNode): Promise<number> {
  return waitFor(() => childPids(node.child.pid!)[0], 'worker pid', 10_000);
}

function syslogInput(): Buffer {
  const head = '<134>1 2026-11-25T10:00:00.000Z bench app - - - ';
  const parts: string[] = [];
  for (let i = 0; i < LINES; i++) {
    const n = String(i).padStart(9, '0');
    parts.push(`${head}${n} ${'x'.repeat(200 - head.length - n.length - 2)}\n`);
  }
  return Buffer.from(parts.join(''));
}

/** CPU time (user + system) of a process's main thread (the JS thread) so far, ms, in clock ticks of 10 ms; 0 once gone. */
function mainThreadCpuMs(pid: number): number {
  try {
    const fields = readFileSync(`/proc/${pid}/task/${pid}/stat`, 'utf8').split(') ')[1]!.split(' ');
    return (Number(fields[11]) + Number(fields[12])) * 10;
  } catch {
    return 0;
  }
}

/**
 * Polls until `finished()`, sampling the worker's main-thread CPU time every 2 ms; resolves when
 * the work ended: the first sample within two clock ticks of the CPU time used by the time
 * `finished()` held. What a worker does when idle (a stats message a second) stays below that;
 * the fdatasync runs on another thread and counts only as the wait it is.
 */
async function workEnd(worker: number, finished: () => boolean, what: string): Promise<number> {
  const samples: [number, number][] = [];
  const deadline = Date.now() + DEADLINE_MS;
  while (!finished()) {
    if (Date.now() > deadline) throw new Error(`timed out: ${what}`);
    samples.push([performance.now(), mainThreadCpuMs(worker)]);
    await sleep(2);
  }
  const used = mainThreadCpuMs(worker);
  return samples.find(([, cpu]) => cpu >= used - 20)?.[0] ?? performance.now();
}

async function sendAll(port: number, input: Buffer): Promise<void> {
  const sock = connect(port, '127.0.0.1');
  await new Promise((r) => sock.once('connect', r));
  for (let at = 0; at < input.length; at += 1 << 20) {
    if (!sock.write(input.subarray(at, Math.min(input.length, at + (1 << 20))))) await new Promise((r) => sock.once('drain', r));
  }
  sock.end();
}

/**
 * One run into a fresh node on a data directory of its own (`run`: which), deleted after it: a
 * disk run that started on the last one's segments recovered them at its start and deleted them
 * in the middle of its measured window, and the freed blocks' discards landed in the next
 * fdatasyncs. `sync` after the deletion lets those land before the next run starts.
 */
async function syslogScenario(dir: TempDir, input: Buffer, disk: boolean, run: number): Promise<Row> {
  const port = await freePort();
  const buffer = disk ? '[pipelines.plugin_sources.config.buffer]\ntype = "disk"\n' : '';
  const dataDir = join(dir.path, `data-${disk ? 'disk' : 'mem'}-${run}`);
  const toml = `data_dir = ${JSON.stringify(dataDir)}\nstatus_interval_ms = 100\n[[pipelines]]\nname = "b"\n${localPluginToml('sources', 'in', 'syslog', port)}${buffer}${sinkToml('out', 'null')}`;
  const node = spawnNode(['-c', dir.file(disk ? 'disk.toml' : 'mem.toml', toml), '--logging.level=debug']);
  try {
    await waitReady(node, 'receiver');
    const worker = await workerOf(node);
    const cpu0 = mainThreadCpuMs(worker);
    const t0 = performance.now();
    const sending = sendAll(port, input);
    const t1 = await workEnd(worker, () => counter(node, 'b', 'sinks.out.total_processed') >= LINES, 'every entry at the null sink');
    await sending;
    const ms = t1 - t0;
    // how much of the run the event loop worked (the rest it waited: for the sender, or for a sync)
    const busy = `event loop busy ${(mainThreadCpuMs(worker) - cpu0) / 1000} s`;
    const syncs = counter(node, 'b', 'sources.in.buffer_syncs');
    const note = disk ? `${busy}; ${Math.round(syncs / (ms / 1000))} syncs/s, ${(LINES / Math.max(1, syncs)).toFixed(0)} entries per sync` : busy;
    return { title: `syslog tcp → ${disk ? 'disk' : 'memory'} buffer → null`, entries: LINES, ms, rss: peakRss(worker), note };
  } finally {
    await node.stop(10_000);
    rmSync(dataDir, { recursive: true, force: true });
    spawnSync('sync');
  }
}

const backlogLine = (i: number) => {
  const head = `{"time":"2026-11-25T10:00:00.000Z","source":"bench","message":"`;
  const tail = `","id":"bench-${i}"}`;
  return `${head}${String(i).padStart(9, '0')} ${'y'.repeat(Math.max(0, ENTRY_BYTES - head.length - tail.length - 10))}${tail}`;
};

/** POSTs `total` entries in batches of 1000, four requests at a time, each until 204. */
async function postBacklog(port: number, total: number): Promise<void> {
  let next = 0;
  const lane = async () => {
    while (next < total) {
      const from = next;
      next = Math.min(total, next + 1000);
      const lines: string[] = [];
      for (let i = from; i < next; i++) lines.push(backlogLine(i));
      for (;;) {
        const { status } = await postLines(port, lines, 60_000);
        if (status === 204) break;
        await new Promise((r) => setTimeout(r, 50));
      }
    }
  };
  await Promise.all([lane(), lane(), lane(), lane()]);
}

const collectorToml = (port: number) => `status_interval_ms = 100\n[[pipelines]]\nname = "c"\n${localPluginToml('sources', 'in', 'http_chain', port)}${sinkToml('out', 'null')}`;

async function backlogScenarios(dir: TempDir): Promise<Row[]> {
  const rows: Row[] = [];
  for (const disk of [false, true]) {
    const [port, collectorPort] = [await freePort(), await freePort()];
    const dataDir = join(dir.path, disk ? 'relay-disk' : 'relay-mem');
    const buffer = disk ? '[pipelines.plugin_sources.config.buffer]\ntype = "disk"\nmax_size_mb = 4096\n' : '';
    const relay = `data_dir = ${JSON.stringify(dataDir)}\nstatus_interval_ms = 100\n[[pipelines]]\nname = "r"\n${localPluginToml('sources', 'in', 'http_chain', port)}${buffer}${localPluginToml('sinks', 'out', 'http_chain', collectorPort, 'node = "relay"\non_full = "block"')}`;
    let collector: RunningNode | undefined;
    // the memory relay needs its collector up (it acknowledges end to end); the disk relay's is down
    if (!disk) {
      collector = spawnNode(['-c', dir.file('collector-mem.toml', collectorToml(collectorPort)), '--logging.level=debug']);
      await waitReady(collector, 'collector');
    }
    const node = spawnNode(['-c', dir.file(disk ? 'relay-disk.toml' : 'relay-mem.toml', relay), '--logging.level=debug']);
    try {
      await waitReady(node, 'relay');
      const worker = await workerOf(node);
      const t0 = performance.now();
      await postBacklog(port, BACKLOG);
      const ms = performance.now() - t0;
      if (!disk) {
        rows.push({ title: 'http_chain → memory buffer → http_chain → collector (up) → null', entries: BACKLOG, ms, rss: peakRss(worker), note: 'normal speed, acknowledged end to end' });
        continue;
      }
      await waitFor(() => counter(node, 'r', 'sources.in.buffer_entries') >= BACKLOG, 'the whole backlog in the buffer', DEADLINE_MS);
      const bytes = counter(node, 'r', 'sources.in.buffer_bytes');
      const syncs = counter(node, 'r', 'sources.in.buffer_syncs');
      rows.push({
        title: 'http_chain → disk buffer (collector down): backlog answered 204',
        entries: BACKLOG,
        ms,
        rss: peakRss(worker),
        note: `${(bytes / MiB).toFixed(0)} MiB on disk, ${syncs} syncs`,
      });
      const segDir = join(dataDir, 'buffers', 'r', 'in');
      const segments = () => readdirSync(segDir).filter((f) => segmentSeq(f) !== undefined).length;
      const held = segments();
      const t1 = performance.now();
      collector = spawnNode(['-c', dir.file('collector-disk.toml', collectorToml(collectorPort)), '--logging.level=debug']);
      await waitFor(() => counter(collector!, 'c', 'sinks.out.total_processed') >= BACKLOG, 'the backlog drained to the collector', DEADLINE_MS);
      const drainMs = performance.now() - t1;
      await waitFor(() => segments() <= 1, 'segments deleted', 60_000);
      rows.push({
        title: 'the backlog drains when the collector returns',
        entries: BACKLOG,
        ms: drainMs,
        rss: peakRss(worker),
        note: `${held} segments while down, ${segments()} after`,
      });
    } finally {
      await node.stop(10_000);
      await collector?.stop(10_000);
    }
  }
  return rows;
}

export async function main(): Promise<Row[]> {
  const dir = tempDir('logrelay-bench-buffer-');
  try {
    const input = syslogInput();
    // pairs run one after the other, memory then disk: the machine's load moves both alike
    const runs: { memory: Row; disk: Row }[] = [];
    for (let r = 0; r < RUNS; r++) {
      process.stderr.write(`run ${r + 1} of ${RUNS}: syslog → memory buffer, then → disk buffer …\n`);
      const memory = await syslogScenario(dir, input, false, r);
      runs.push({ memory, disk: await syslogScenario(dir, input, true, r) });
    }
    const median = (which: 'memory' | 'disk'): Row => medianRun(runs.map((r) => r[which]), (r) => r.ms);
    const rows: Row[] = [median('memory'), median('disk')];
    const ratio = rows[0]!.ms / rows[1]!.ms;
    const each = runs.map((r) => (r.memory.ms / r.disk.ms).toFixed(2)).join(', ');
    if (BACKLOG > 0) {
      process.stderr.write(`running the backlog (${BACKLOG} entries of ${ENTRY_BYTES} bytes) …\n`);
      rows.push(...(await backlogScenarios(dir)));
    }
    const table = rows.map((r) => [r.title, String(r.entries), (r.ms / 1000).toFixed(2), Math.round(r.entries / (r.ms / 1000)).toLocaleString('en-US'), (r.rss / MiB).toFixed(1), r.note]);
    process.stdout.write(
      `\n${markdownTable(['scenario', 'entries', 'seconds', 'entries/s', 'worker peak RSS MiB', 'note'], table, true)}\n\ndisk buffer / memory buffer (syslog tcp → null): ${ratio.toFixed(2)} × (medians of ${RUNS} runs; each run's pair: ${each} ×)\nnode ${process.version}, ${LINES} syslog lines of 200 bytes, backlog ${BACKLOG} entries of ${ENTRY_BYTES} bytes\n`,
    );
    return rows;
  } finally {
    dir.remove();
  }
}

runIfMain(import.meta.url, main, { exitWhenDone: true });
