// Throughput bench: file → raw → null, file → json → null and file → raw → file over 1,000,000
// lines of 200 bytes, each through a real node (bin/logrelay.js as a child process), against a
// bare-Node baseline measured in the same run; beside them the line-assembly stages (DESIGN.md
// §21): the same lines as CRI container lines, and Java stack traces joined by the multiline
// preset. Prints a table. Bounded: every step has a deadline.
//
// Timing: the node is started on an empty directory; the prepared input is renamed into it (t0),
// so discovery (check_interval_ms = 10) and the whole read are inside the measurement. The run
// ends when the null sink's worker has read the whole file (its `rchar` in /proc; the null sink
// is synchronous, so reading and delivering end within one read) or when the file sink's output
// has the input's size. The status report's counters then confirm that every entry arrived.
// Beside each node's rate, the CPU time (user + system, all threads) its workers and its primary
// spent in that window per entry: on a shared or virtual machine the rate moves with what else
// runs (one build read 209,000 and 332,000 CRI entries/s within two minutes, at 2.97 and 2.92 s
// of worker CPU), the CPU per entry much less; compare builds by both.

import { type ChildProcess, spawn, spawnSync } from 'node:child_process';
import { copyFileSync, mkdirSync, mkdtempSync, readdirSync, renameSync, rmSync, statSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { fileSinkToml, fileSourceToml, sinkToml } from '../test/helpers/toml.js';
import { writeCriInput, writeInput, writeJavaInput, JAVA_TRACE_LINES } from './input.js';
import { bytesRead, childPids, cpuMs, peakRss, until } from './proc.js';
import { markdownTable } from './report.js';

const ROOT = fileURLToPath(new URL('../../', import.meta.url));
const BIN = join(ROOT, 'bin', 'logrelay.js');
const LINES = Number(process.env.BENCH_LINES ?? 1_000_000);
/** rounds of every scenario (BENCH_RUNS, default 3); each figure is the median */
const RUNS = Math.max(1, Number(process.env.BENCH_RUNS ?? 3));
/** lines of the one-against-two-pipelines rounds (BENCH_SCALE_LINES, default 4,000,000; 0: none) */
const SCALE_LINES = Number(process.env.BENCH_SCALE_LINES ?? 4_000_000);
const LINE_BYTES = 200;
const SCENARIO_DEADLINE_MS = 120_000;
const MiB = 1024 * 1024;

type Format = 'raw' | 'json';
type SinkKind = 'null' | 'file';

type InputKind = 'plain' | 'cri' | 'java';

interface Scenario {
  readonly title: string;
  readonly format: Format;
  readonly sink: SinkKind;
  /** pipelines side by side, each on its own copy of the input (one worker each) */
  readonly pipelines?: 2;
  /** the input's kind (default plain lines) and the file source's extra config lines for it */
  readonly input?: InputKind;
  readonly source?: string;
}

const ALL_SCENARIOS: readonly Scenario[] = [
  { title: 'file → raw → null', format: 'raw', sink: 'null' },
  { title: 'file → json → null', format: 'json', sink: 'null' },
  { title: 'file → raw → file', format: 'raw', sink: 'file' },
  { title: 'two pipelines: file → raw → null, each', format: 'raw', sink: 'null', pipelines: 2 },
  { title: 'CRI file → json → null', format: 'json', sink: 'null', input: 'cri', source: 'container_format = "cri"' },
  { title: `java traces (${JAVA_TRACE_LINES} lines each) → json → null`, format: 'json', sink: 'null', input: 'java', source: 'multiline = { preset = "java" }' },
];

/** BENCH_ONLY: run only the scenarios whose title contains one of these comma-separated words */
const ONLY = (process.env.BENCH_ONLY ?? '').split(',').filter(Boolean);
const SCENARIOS = ONLY.length === 0 ? ALL_SCENARIOS : ALL_SCENARIOS.filter((sc) => ONLY.some((w) => sc.title.includes(w)));

/** An input file of one kind: where it is, its size, and the entries it makes. */
interface Input {
  readonly path: string;
  readonly bytes: number;
  readonly entries: number;
}

interface Result {
  readonly title: string;
  readonly entries: number;
  readonly ms: number;
  readonly peakRss: number;
  /** CPU time (user + system) of the node's workers and of its primary over the timed window, ms; 0 for the bare Node rows */
  readonly workerCpuMs: number;
  readonly primaryCpuMs: number;
  readonly note: string;
}


function pipelineToml(name: string, watch: string, format: Format, sink: SinkKind, outDir: string, source = ''): string {
  const sinkTable = sink === 'null' ? sinkToml('out', 'null') : fileSinkToml('out', outDir, 'max_size_mb = 10000\non_full = "block"');
  return `[[pipelines]]
name = "${name}"
[pipelines.flow.format]
type = "${format}"
${fileSourceToml('in', watch, `from = "start"\ncheck_interval_ms = 10\n${source}`)}${sinkTable}`;
}

interface RunningNode {
  readonly child: ChildProcess;
  readonly records: Record<string, unknown>[];
}

function startNode(configPath: string): RunningNode {
  const child = spawn(process.execPath, [BIN, '-c', configPath, '--logging.level=debug'], { stdio: ['ignore', 'ignore', 'pipe'] });
  const records: Record<string, unknown>[] = [];
  let rest = '';
  child.stderr!.setEncoding('utf8');
  child.stderr!.on('data', (chunk: string) => {
    const lines = (rest + chunk).split('\n');
    rest = lines.pop() ?? '';
    for (const l of lines) {
      try {
        records.push(JSON.parse(l) as Record<string, unknown>);
      } catch {
        // not a record
      }
    }
  });
  return { child, records };
}

async function stopNode(node: RunningNode): Promise<void> {
  if (node.child.exitCode !== null || node.child.signalCode !== null) return;
  const exited = new Promise((r) => node.child.once('exit', r));
  node.child.kill('SIGTERM');
  const timer = setTimeout(() => node.child.kill('SIGKILL'), 15_000);
  await exited;
  clearTimeout(timer);
}

function dirBytes(dir: string): number {
  let total = 0;
  for (const f of readdirSync(dir)) total += statSync(join(dir, f)).size;
  return total;
}

async function runScenario(sc: Scenario, inputs: readonly string[], inputBytes: number, work: string, lines = LINES): Promise<Result> {
  const dir = mkdtempSync(join(work, 'scenario-'));
  const names = sc.pipelines === 2 ? ['bench', 'bench2'] : ['bench'];
  const watches = names.map((n) => join(dir, `in-${n}`));
  const outDir = join(dir, 'out');
  for (const w of watches) mkdirSync(w);
  const configPath = join(dir, 'bench.toml');
  writeFileSync(configPath, `status_interval_ms = 1000\n${names.map((n, i) => pipelineToml(n, watches[i]!, sc.format, sc.sink, outDir, sc.source)).join('\n')}`);
  const node = startNode(configPath);
  const moved: [string, string][] = [];
  try {
    await until(() => node.records.filter((r) => r.msg === 'Starting pipeline').length === names.length, 'pipelines started', 20_000);
    const workers = await until(() => (childPids(node.child.pid!).length === names.length ? childPids(node.child.pid!) : undefined), 'worker pids', 10_000);
    // the sources have started once they report their counters
    for (const n of names) await until(() => node.records.some((r) => r.pipeline === n && 'sources.in.total_entries' in r), 'first status report', 10_000);
    const base = workers.map(bytesRead);
    const cpu0 = workers.reduce((n, w) => n + cpuMs(w), 0);
    const primary0 = cpuMs(node.child.pid!);
    const t0 = performance.now();
    for (const [i, w] of watches.entries()) {
      const to = join(w, 'input.log');
      renameSync(inputs[i]!, to);
      moved.push([to, inputs[i]!]);
    }
    const done = sc.sink === 'null' ? () => workers.every((w, i) => bytesRead(w) - base[i]! >= inputBytes) : () => dirBytes(outDir) >= inputBytes;
    await until(done, `${sc.title}: all input delivered`, SCENARIO_DEADLINE_MS, 2);
    const ms = performance.now() - t0;
    const workerCpuMs = workers.reduce((n, w) => n + cpuMs(w), 0) - cpu0;
    const primaryCpuMs = cpuMs(node.child.pid!) - primary0;
    const rss = Math.max(...workers.map(peakRss));
    let entries = 0;
    let dropped = 0;
    for (const n of names) {
      const report = await until(
        () => node.records.findLast((r) => r.pipeline === n && (r['sinks.out.total_processed'] as number) >= lines),
        `${sc.title}: counters show every entry`,
        15_000,
        50,
      );
      entries += report['sinks.out.total_processed'] as number;
      dropped += (report['total_dropped_by_sink'] as number) + (report['sources.in.dropped_entries'] as number);
    }
    const note = `processed ${entries}, dropped ${dropped}`;
    return { title: sc.title, entries, ms, peakRss: rss, workerCpuMs, primaryCpuMs, note };
  } finally {
    await stopNode(node);
    for (const [from, to] of moved) renameSync(from, to);
    rmSync(dir, { recursive: true, force: true });
  }
}

function runBaseline(input: string, output: string, json = false): Result {
  const r = spawnSync(process.execPath, [fileURLToPath(new URL('./baseline.js', import.meta.url)), input, output, ...(json ? ['json'] : [])], {
    encoding: 'utf8',
    timeout: SCENARIO_DEADLINE_MS,
  });
  if (r.status !== 0) throw new Error(`baseline failed: ${r.stderr}`);
  const out = JSON.parse(r.stdout) as { ms: number; lines: number; peak_rss: number };
  const to = output === '/dev/null' ? '/dev/null' : 'file';
  return json
    ? { title: `bare Node JSON.stringify NDJSON → ${to}`, entries: out.lines, ms: out.ms, peakRss: out.peak_rss, workerCpuMs: 0, primaryCpuMs: 0, note: 'read, split, JSON.stringify, write' }
    : { title: `bare Node → ${to}`, entries: out.lines, ms: out.ms, peakRss: out.peak_rss, workerCpuMs: 0, primaryCpuMs: 0, note: 'read, split, write' };
}

/**
 * One pipeline against two, on SCALE_LINES lines each, in rounds: a run of 1,000,000 lines takes
 * half a second at 2 M/s, so start-up (the file found, the first reads) weighs on the ratio.
 */
async function scalingRounds(work: string): Promise<string> {
  const [one, two] = [SCENARIOS[0]!, SCENARIOS.find((sc) => sc.pipelines === 2)!];
  const input = join(work, 'scale.log');
  const second = join(work, 'scale-2.log');
  const bytes = writeInput(input, SCALE_LINES, LINE_BYTES);
  copyFileSync(input, second);
  const ratios: number[] = [];
  try {
    for (let round = 1; round <= RUNS; round++) {
      process.stderr.write(`scaling round ${round}/${RUNS} (${SCALE_LINES} lines each) …\n`);
      const a = await runScenario(one, [input, second], bytes, work, SCALE_LINES);
      const b = await runScenario(two, [input, second], bytes, work, SCALE_LINES);
      ratios.push(b.entries / b.ms / (a.entries / a.ms));
    }
  } finally {
    rmSync(input, { force: true });
    rmSync(second, { force: true });
  }
  const sorted = [...ratios].sort((x, y) => x - y);
  return `two pipelines on two workers, ${SCALE_LINES.toLocaleString('en-US')} lines each: ${sorted[Math.floor(sorted.length / 2)]!.toFixed(2)} × one pipeline's entries/s (median; by round ${ratios.map((x) => x.toFixed(2)).join(', ')})\n`;
}

/** The round with the median rate, its note naming the range of all rounds. */
function medianResult(runs: readonly Result[]): Result {
  const rate = (r: Result) => r.entries / (r.ms / 1000);
  const sorted = [...runs].sort((a, b) => rate(a) - rate(b));
  const mid = sorted[Math.floor(sorted.length / 2)]!;
  if (runs.length === 1) return mid;
  // CPU time hardly moves with the machine's other load where wall-clock rates do: its own median
  const mid2 = (pick: (r: Result) => number) => [...runs].map(pick).sort((a, b) => a - b)[Math.floor(runs.length / 2)]!;
  const cpu = { workerCpuMs: mid2((r) => r.workerCpuMs), primaryCpuMs: mid2((r) => r.primaryCpuMs) };
  const range = `${Math.round(rate(sorted[0]!)).toLocaleString('en-US')}–${Math.round(rate(sorted.at(-1)!)).toLocaleString('en-US')}/s`;
  return { ...mid, ...cpu, note: `${mid.note}; rounds ${range}` };
}

function table(results: readonly Result[], inputBytes: number, baseNull: Result, baseFile: Result, baseJson: Result): string {
  const head = ['scenario', 'entries', 'seconds', 'entries/s', 'MiB/s', 'worker CPU µs/entry', 'primary CPU µs/entry', 'peak RSS MiB', 'vs bare Node', 'note'];
  const plainJson = results.find((r) => r.title === 'file → json → null');
  const rows = results.map((r) => {
    const rate = r.entries / (r.ms / 1000);
    const assembled = SCENARIOS.find((sc) => sc.title === r.title)?.input;
    const lineRate = assembled === 'java' ? rate * JAVA_TRACE_LINES : rate;
    const vsPlain =
      assembled && plainJson ? `; ${((lineRate / (plainJson.entries / (plainJson.ms / 1000))) * 100).toFixed(0)} % of file → json → null in lines/s (${Math.round(lineRate).toLocaleString('en-US')} lines/s)` : '';
    const base = r.title.endsWith('file') ? baseFile : r.title.includes('json') ? baseJson : baseNull;
    const baseRate = base.entries / (base.ms / 1000);
    return [
      r.title,
      String(r.entries),
      (r.ms / 1000).toFixed(2),
      Math.round(rate).toLocaleString('en-US'),
      // in plain lines' bytes (a CRI line carries its prefix on top)
      (((inputBytes / LINES) * (lineRate / rate) * r.entries) / MiB / (r.ms / 1000)).toFixed(1),
      r.workerCpuMs > 0 ? ((r.workerCpuMs * 1000) / r.entries).toFixed(2) : '',
      r.workerCpuMs > 0 ? ((r.primaryCpuMs * 1000) / r.entries).toFixed(3) : '',
      (r.peakRss / MiB).toFixed(1),
      r === base ? '100 %' : `${((rate / baseRate) * 100).toFixed(0)} % of ${base.title}`,
      r.note + vsPlain,
    ];
  });
  return markdownTable(head, rows);
}

async function main(): Promise<void> {
  const work = mkdtempSync(join(tmpdir(), 'logrelay-bench-'));
  try {
    const input = join(work, 'input.log');
    const t = performance.now();
    const inputBytes = writeInput(input, LINES, LINE_BYTES);
    process.stderr.write(`input: ${LINES} lines, ${(inputBytes / MiB).toFixed(1)} MiB, written in ${((performance.now() - t) / 1000).toFixed(1)} s\n`);
    // warm the page cache for everyone alike
    runBaseline(input, '/dev/null');
    const second = join(work, 'input-2.log');
    copyFileSync(input, second);
    const cri = join(work, 'cri.log');
    const java = join(work, 'java.log');
    const kinds: Record<'cri' | 'java', Input> = {
      cri: { path: cri, bytes: writeCriInput(cri, LINES, LINE_BYTES), entries: LINES },
      java: { path: java, bytes: writeJavaInput(java, LINES, LINE_BYTES), entries: LINES / JAVA_TRACE_LINES },
    };
    // Rounds of every baseline and scenario in turn: a slow phase of the machine hits all alike,
    // and each figure is the median of its rounds.
    const rounds: Result[][] = [];
    for (let round = 1; round <= RUNS; round++) {
      const results = [runBaseline(input, '/dev/null'), runBaseline(input, join(work, 'baseline-out.log'))];
      rmSync(join(work, 'baseline-out.log'), { force: true });
      results.push(runBaseline(input, '/dev/null', true));
      for (const sc of SCENARIOS) {
        process.stderr.write(`round ${round}/${RUNS}: running ${sc.title} …\n`);
        try {
          const own = sc.input && sc.input !== 'plain' ? kinds[sc.input] : undefined;
          results.push(own ? await runScenario(sc, [own.path], own.bytes, work, own.entries) : await runScenario(sc, [input, second], inputBytes, work));
        } catch (err) {
          process.stderr.write(`${sc.title}: ${(err as Error).message}\n`);
          results.push({ title: sc.title, entries: 0, ms: Number.POSITIVE_INFINITY, peakRss: 0, workerCpuMs: 0, primaryCpuMs: 0, note: `failed: ${(err as Error).message}` });
        }
      }
      rounds.push(results);
    }
    const results = rounds[0]!.map((first) => medianResult(rounds.map((r) => r.find((x) => x.title === first.title)!)));
    const [baseNull, baseFile, baseJson] = results as [Result, Result, Result];
    const rateOf = (r: Result | undefined) => (r ? r.entries / r.ms : Number.NaN);
    const ratios = rounds.map((r) => rateOf(r.find((x) => x.title.startsWith('two pipelines'))) / rateOf(r.find((x) => x.title === 'file → raw → null')));
    const one = results.find((r) => r.title === 'file → raw → null');
    const two = results.find((r) => r.title.startsWith('two pipelines'));
    let scaling =
      one && two
        ? `two pipelines on two workers: ${(rateOf(two) / rateOf(one)).toFixed(2)} × one pipeline's entries/s (medians; by round ${ratios.map((x) => x.toFixed(2)).join(', ')})\n`
        : '';
    if (SCALE_LINES > 0) scaling += await scalingRounds(work);
    process.stdout.write(`\n${table(results, inputBytes, baseNull, baseFile, baseJson)}\n\n${scaling}\n\nnode ${process.version}, ${LINES} lines of ${LINE_BYTES} bytes, ${RUNS} rounds\n`);
  } finally {
    rmSync(work, { recursive: true, force: true });
  }
}

await main();
