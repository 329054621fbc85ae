// Transform bench (DESIGN.md §24): the goals in one run. Through real nodes (bin/logrelay.js),
// on the same nginx access lines of 200 bytes: file → json → null against file → [parse
// nginx_combined, two set, one redact with two presets, route to two null sinks by status] →
// json → null, in rounds (median), with the worker's peak RSS; then in this process the CPU time
// of a `regex` parse of a 200-byte line with five groups, and of one condition. Prints a table.
//
// `BENCH_LINES` (default 1,000,000), `BENCH_RUNS` (default 3).

import { type ChildProcess, spawn } from 'node:child_process';
import { mkdirSync, mkdtempSync, renameSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { checkFields } from '../src/core/spec.js';
import { parseLine } from '../src/core/entry.js';
import { createLogger } from '../src/core/log.js';
import { compileCondition } from '../src/transform/condition.js';
import { compileTransforms } from '../src/transform/index.js';
import { TRANSFORM_COMMON_FIELDS, TRANSFORM_SPECS, type TransformConfig } from '../src/transform/spec.js';
import { fileSourceToml, sinkToml } from '../test/helpers/toml.js';
import { writeInput } from './input.js';
import { bytesRead, childPids, cpuMs, peakRss, until } from './proc.js';
import { markdownTable, median, rate, runIfMain } from './report.js';

const ROOT = fileURLToPath(new URL('../../', import.meta.url));
const BIN = join(ROOT, 'bin', 'logrelay.js');
const LINES = Number(process.env.BENCH_LINES ?? 1_000_000);
const RUNS = Math.max(1, Number(process.env.BENCH_RUNS ?? 3));
const LINE_BYTES = 200;
const DEADLINE_MS = 180_000;
const MiB = 1024 * 1024;

const AGENTS = ['Mozilla/5.0 (X11; Linux x86_64)', 'curl/8.5.0', 'Go-http-client/1.1', '-'];

/** An nginx `combined` line of exactly `lineBytes` bytes with its `\n`; one in 20 a 5xx. */
export function nginxLine(i: number, lineBytes: number): string {
  const status = i % 20 === 0 ? 503 : i % 7 === 0 ? 404 : 200;
  const bytes = i % 11 === 0 ? '-' : String(500 + (i % 9000));
  const head = `10.${(i >> 16) & 255}.${(i >> 8) & 255}.${i & 255} - - [14/Nov/2023:22:13:20 +0000] "GET /api/v1/items/${i % 9973}?user=u${i % 997}@example.com`;
  const tail = ` HTTP/1.1" ${status} ${bytes} "-" "${AGENTS[i % AGENTS.length]}"`;
  const pad = Math.max(0, lineBytes - 1 - head.length - tail.length);
  return `${head}${'&p='.padEnd(pad, 'x')}${tail}\n`.slice(-lineBytes);
}

const STEPS = `[[pipelines.flow.transforms]]
type = "parse"
format = "nginx_combined"
[[pipelines.flow.transforms]]
type = "set"
fields = { "fields.service" = "shop", "fields.route" = "{{ source }}/{{ fields.method }}" }
[[pipelines.flow.transforms]]
type = "set"
if_missing = true
fields = { "fields.bytes" = 0 }
[[pipelines.flow.transforms]]
type = "redact"
presets = ["email", "credit_card"]
`;

interface Scenario {
  readonly title: string;
  readonly toml: (watch: string) => string;
  /** sinks whose total_processed together must reach the lines */
  readonly sinks: readonly string[];
}

const SCENARIOS: readonly Scenario[] = [
  {
    title: 'file → json → null',
    toml: (watch) => `[[pipelines]]\nname = "bench"\n[pipelines.flow.format]\ntype = "json"\n${fileSourceToml('in', watch, 'from = "start"\ncheck_interval_ms = 10')}${sinkToml('out', 'null')}`,
    sinks: ['out'],
  },
  {
    title: 'file → parse, set ×2, redact, route by status → json → 2 null',
    toml: (watch) =>
      `[[pipelines]]\nname = "bench"\n[pipelines.flow.format]\ntype = "json"\n${STEPS}${fileSourceToml('in', watch, 'from = "start"\ncheck_interval_ms = 10')}` +
      `[[pipelines.plugin_sinks]]\nid = "errors"\ntype = "null"\nwhen = "fields.status >= 500"\n[[pipelines.plugin_sinks]]\nid = "rest"\ntype = "null"\nelse = true\n`,
    sinks: ['errors', 'rest'],
  },
];

interface Result {
  readonly title: string;
  readonly ms: number;
  /** CPU time of the pipeline's worker over the run: steadier than wall time on a shared machine */
  readonly cpu: number;
  readonly rss: number;
}


function startNode(configPath: string): { child: ChildProcess; records: Record<string, unknown>[] } {
  // LOGRELAY_CPU_PROF_DIR and LOGRELAY_NODE_FLAGS as for every node the benches start (test/helpers/node.ts)
  const flags = process.env.LOGRELAY_CPU_PROF_DIR ? ['--cpu-prof', `--cpu-prof-dir=${process.env.LOGRELAY_CPU_PROF_DIR}`] : [];
  if (process.env.LOGRELAY_NODE_FLAGS) flags.push(...process.env.LOGRELAY_NODE_FLAGS.split(' ').filter(Boolean));
  const child = spawn(process.execPath, [...flags, BIN, '-c', configPath, '--logging.level=debug'], { stdio: ['ignore', 'ignore', 'pipe'] });
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

async function runScenario(sc: Scenario, input: string, inputBytes: number, work: string): Promise<Result> {
  const dir = mkdtempSync(join(work, 'scenario-'));
  const watch = join(dir, 'in');
  mkdirSync(watch);
  const configPath = join(dir, 'bench.toml');
  writeFileSync(configPath, `status_interval_ms = 1000\n${sc.toml(watch)}`);
  const node = startNode(configPath);
  const moved = join(watch, 'input.log');
  let renamed = false;
  try {
    await until(() => node.records.some((r) => r.msg === 'Starting pipeline'), 'pipeline started', 20_000);
    const [worker] = await until(() => (childPids(node.child.pid!).length === 1 ? childPids(node.child.pid!) : undefined), 'worker pid', 10_000);
    await until(() => node.records.some((r) => r.pipeline === 'bench' && 'sources.in.total_entries' in r), 'first status report', 10_000);
    const base = bytesRead(worker!);
    const cpu0 = cpuMs(worker!);
    const t0 = performance.now();
    renameSync(input, moved);
    renamed = true;
    await until(() => bytesRead(worker!) - base >= inputBytes, `${sc.title}: all input read`, DEADLINE_MS, 2);
    const ms = performance.now() - t0;
    const cpu = cpuMs(worker!) - cpu0;
    const rss = peakRss(worker!);
    await until(
      () => node.records.findLast((r) => r.pipeline === 'bench' && sc.sinks.reduce((n, s) => n + ((r[`sinks.${s}.total_processed`] as number | undefined) ?? 0), 0) >= LINES),
      `${sc.title}: counters show every entry`,
      20_000,
      50,
    );
    return { title: sc.title, ms, cpu, rss };
  } finally {
    const exited = new Promise((r) => node.child.once('exit', r));
    node.child.kill('SIGTERM');
    const timer = setTimeout(() => node.child.kill('SIGKILL'), 15_000);
    await exited;
    clearTimeout(timer);
    if (renamed) renameSync(moved, input);
    rmSync(dir, { recursive: true, force: true });
  }
}

const silent = createLogger('silent', { write() {} });
const step = (cfg: Record<string, unknown> & { type: keyof typeof TRANSFORM_SPECS }): TransformConfig =>
  checkFields({ ...TRANSFORM_COMMON_FIELDS, ...TRANSFORM_SPECS[cfg.type].fields }, cfg, 'bench') as TransformConfig;

/**
 * CPU µs per call of `fn`: the median of 5 rounds of n / 5 calls (after a warm-up of n / 10), so
 * that one round slowed by what else shares the CPU does not make the figure.
 */
function cpuMicros(n: number, fn: (i: number) => void): number {
  for (let i = 0; i < n / 10; i++) fn(i);
  const per = Math.ceil(n / 5);
  const rounds: number[] = [];
  for (let r = 0; r < 5; r++) {
    const before = process.cpuUsage();
    for (let i = 0; i < per; i++) fn(i);
    const used = process.cpuUsage(before);
    rounds.push((used.user + used.system) / per);
  }
  return median(rounds);
}

/** A `regex` parse of a 200-byte line with five named groups: CPU µs per entry. */
function regexParseMicros(n: number): number {
  const t = compileTransforms(
    [step({ type: 'parse', format: 'regex', pattern: '^(?<time>\\S+) (?<level>[A-Z]+) (?<app>[^\\[]+)\\[(?<pid>\\d+)\\]: request id=(?<id>\\d+) ' })],
    'bench',
    'bench',
    silent,
  );
  const lines = Array.from({ length: 1024 }, (_, i) => benchText(i));
  return cpuMicros(n, (i) => {
    t.run({ time: 0, source: 'app', message: lines[i & 1023]! }, 0);
  });
}

/** The plain bench line (bench/input.ts) without its newline: 199 characters. */
function benchText(i: number): string {
  const time = new Date(1_700_000_000_000 + i).toISOString();
  const s = `${time} INFO api[${1000 + (i % 7)}]: request id=${i} method=GET path=/api/v1/items/${i % 9973} status=200 duration_ms=${i % 250} msg="`;
  return `${s}${'lorem ipsum dolor sit amet '.repeat(8)}`.slice(0, LINE_BYTES - 2) + '"';
}

/** `level >= 'warn' and fields.status >= 500`: CPU µs per evaluation. */
function conditionMicros(n: number): number {
  const when = compileCondition("level >= 'warn' and fields.status >= 500");
  const entries = Array.from({ length: 1024 }, (_, i) => parseLine(`{"msg":"x","level":"${i % 3 === 0 ? 'error' : 'info'}","status":${i % 5 === 0 ? 503 : 200}}`, 'app', 0, false));
  let held = 0;
  const us = cpuMicros(n, (i) => {
    if (when(entries[i & 1023]!)) held++;
  });
  if (held === 0) throw new Error('the condition never held');
  return us;
}

async function main(): Promise<void> {
  const work = mkdtempSync(join(tmpdir(), 'logrelay-bench-transform-'));
  try {
    const input = join(work, 'input.log');
    const inputBytes = writeInput(input, LINES, LINE_BYTES, nginxLine);
    const rounds: Result[][] = SCENARIOS.map(() => []);
    for (let round = 1; round <= RUNS; round++) {
      for (const [k, sc] of SCENARIOS.entries()) {
        process.stderr.write(`round ${round}/${RUNS}: ${sc.title} …\n`);
        rounds[k]!.push(await runScenario(sc, input, inputBytes, work));
      }
    }
    const rateOf = (r: Result) => LINES / (r.ms / 1000);
    const med = rounds.map((rs) => rs.sort((a, b) => rateOf(a) - rateOf(b))[Math.floor(rs.length / 2)]!);
    const plain = rateOf(med[0]!);
    const ratios = rounds[0]!.map((_, i) => rateOf(rounds[1]![i]!) / rateOf(rounds[0]![i]!));
    const cpuPer = (r: Result) => (r.cpu * 1000) / LINES;
    const rows = med.map((r, k) => [
      r.title,
      rate(rateOf(r)),
      (((inputBytes / LINES) * rateOf(r)) / MiB).toFixed(1),
      cpuPer(r).toFixed(2),
      (r.rss / MiB).toFixed(1),
      k === 0 ? '1.00' : `${(rateOf(r) / plain).toFixed(2)} (goal ≥ 0.6); by worker CPU ${(cpuPer(med[0]!) / cpuPer(r)).toFixed(2)}`,
    ]);
    const regex = regexParseMicros(200_000);
    const cond = conditionMicros(2_000_000);
    rows.push(['regex parse, 200-byte line, 5 groups (in process)', rate(1e6 / regex), '', regex.toFixed(3), '', 'goal ≤ 1 µs CPU/entry']);
    rows.push(["condition `level >= 'warn' and fields.status >= 500` (in process)", rate(1e6 / cond), '', cond.toFixed(4), '', 'goal ≤ 0.1 µs CPU/eval']);
    process.stdout.write(
      `\n${markdownTable(['scenario', 'entries/s', 'MiB/s', 'worker CPU µs/entry', 'peak RSS MiB', 'vs file → json → null'], rows)}\n\n` +
        `transform chain ÷ plain by round: ${ratios.map((x) => x.toFixed(2)).join(', ')} (median ${median(ratios).toFixed(2)})\n` +
        `node ${process.version}, ${LINES.toLocaleString('en-US')} nginx lines of ${LINE_BYTES} bytes, ${RUNS} rounds\n`,
    );
  } finally {
    rmSync(work, { recursive: true, force: true });
  }
}

runIfMain(import.meta.url, main);
