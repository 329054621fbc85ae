// Latency of a new file (DESIGN.md §6, §21): ms from a new file's first line being written to its
// entry on the node's stdout, for a file in a watched directory and for a new pod's log under an
// `include` glob (its directories new too), with directory events on (the default) and off
// (polling at check_interval_ms = 1000, the default). Prints a table. Bounded: every wait has a deadline.

import { type ChildProcess, spawn } from 'node:child_process';
import { mkdirSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { markdownTable } from './report.js';

const BIN = join(fileURLToPath(new URL('../../', import.meta.url)), 'bin', 'logrelay.js');
/** new files per case (BENCH_SAMPLES, default 20) */
const SAMPLES = Number(process.env.BENCH_SAMPLES ?? 20);
const DEADLINE_MS = 10_000;

interface Case {
  readonly title: string;
  /** the file source's config lines for `root` */
  readonly source: (root: string) => string;
  /** where the n-th new file goes (its directories are made first) */
  readonly file: (root: string, n: number) => string;
  /** its line is a CRI line */
  readonly cri?: true;
}

const CASES: readonly Case[] = [
  { title: 'directory + pattern, events', source: (root) => `directory = ${JSON.stringify(root)}\npattern = "*.log"`, file: (root, n) => join(root, `new-${n}.log`) },
  {
    title: 'include glob, new pod directory, events',
    source: (root) => `include = [${JSON.stringify(join(root, '*', '*', '*.log'))}]\ncontainer_format = "cri"\nkubernetes_metadata = true`,
    file: (root, n) => join(root, `ns_pod-${n}_uid-${n}`, 'app', '0.log'),
    cri: true,
  },
  { title: 'directory + pattern, polling only', source: (root) => `directory = ${JSON.stringify(root)}\npattern = "*.log"\nwatch_events = false`, file: (root, n) => join(root, `new-${n}.log`) },
];

const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

async function runCase(c: Case, work: string): Promise<number[]> {
  const root = mkdtempSync(join(work, 'case-'));
  const config = join(work, 'node.toml');
  writeFileSync(
    config,
    `[[pipelines]]\nname = "p"\n[[pipelines.plugin_sources]]\nid = "f"\ntype = "file"\n[pipelines.plugin_sources.config]\n${c.source(root)}\n[[pipelines.plugin_sinks]]\ntype = "stdout"\n`,
  );
  const child: ChildProcess = spawn(process.execPath, [BIN, '-c', config], { stdio: ['ignore', 'pipe', 'pipe'] });
  const arrived = new Map<string, number>();
  let rest = '';
  child.stdout!.setEncoding('utf8');
  child.stdout!.on('data', (chunk: string) => {
    const now = performance.now();
    const lines = (rest + chunk).split('\n');
    rest = lines.pop() ?? '';
    for (const l of lines) arrived.set(l, now);
  });
  let started = false;
  child.stderr!.setEncoding('utf8');
  child.stderr!.on('data', (chunk: string) => {
    if (chunk.includes('Starting pipeline')) started = true;
  });
  const until = async (check: () => boolean, what: string) => {
    const deadline = Date.now() + DEADLINE_MS;
    while (!check()) {
      if (Date.now() > deadline) throw new Error(`${c.title}: timed out: ${what}`);
      await sleep(1);
    }
  };
  try {
    await until(() => started, 'started');
    await sleep(500);
    const out: number[] = [];
    for (let n = 0; n < SAMPLES; n++) {
      const path = c.file(root, n);
      mkdirSync(join(path, '..'), { recursive: true });
      const probe = `probe ${n}`;
      const line = c.cri ? `2026-11-25T10:45:00.000000001Z stdout F ${probe}\n` : `${probe}\n`;
      const t0 = performance.now();
      writeFileSync(path, line);
      await until(() => arrived.has(probe), `probe ${n}`);
      out.push(arrived.get(probe)! - t0);
      // apart, so every file is its own discovery
      await sleep(50 + Math.random() * 100);
    }
    return out;
  } finally {
    child.kill('SIGTERM');
    await new Promise((r) => child.once('exit', r));
    rmSync(root, { recursive: true, force: true });
  }
}

const pct = (sorted: readonly number[], p: number) => sorted[Math.min(sorted.length - 1, Math.floor(sorted.length * p))]!;

async function main(): Promise<void> {
  const work = mkdtempSync(join(tmpdir(), 'logrelay-latency-'));
  try {
    const rows: string[][] = [];
    for (const c of CASES) {
      process.stderr.write(`running ${c.title} …\n`);
      const ms = (await runCase(c, work)).sort((a, b) => a - b);
      rows.push([c.title, String(ms.length), pct(ms, 0.5).toFixed(1), pct(ms, 0.9).toFixed(1), ms.at(-1)!.toFixed(1)]);
    }
    process.stdout.write(`\n${markdownTable(['new file', 'files', 'median ms', 'p90 ms', 'max ms'], rows)}\n\nms from the first line written to its entry on stdout; check_interval_ms = 1000 (default); node ${process.version}\n`);
  } finally {
    rmSync(work, { recursive: true, force: true });
  }
}

await main();
