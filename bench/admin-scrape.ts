// Admin endpoint under scraping (issue 15, acceptance 6): file → raw → null through a real node
// with the admin endpoint on, once left alone and once while /metrics takes waves of 1,000
// concurrent scrapes for the whole run. Prints entries/s for both, with the scrapes served and
// any that failed. The scrapes are served by the primary from the counters the workers already
// send, so the pipeline's rate should not move beyond noise. The run ends when the worker has
// read the whole file (its `rchar` in /proc; the null sink is synchronous), then /status confirms
// every entry was delivered. `node dist/bench/admin-scrape.js` (BENCH_LINES, default 1,000,000
// lines of 200 bytes); about a minute.

import { mkdirSync, readFileSync, renameSync } from 'node:fs';
import { join } from 'node:path';
import { freePort, spawnNode, tempDir, waitFor } from '../test/helpers/node.js';
import { fileSourceToml, sinkToml } from '../test/helpers/toml.js';
import { writeInput } from './input.js';
import { bytesRead } from './proc.js';
import { markdownTable, runIfMain } from './report.js';

const LINES = Number(process.env.BENCH_LINES ?? 1_000_000);
const LINE_BYTES = 200;
const CONCURRENT = 1000;
const DEADLINE_MS = 180_000;

interface Result {
  readonly title: string;
  readonly ms: number;
  readonly scrapes: number;
  readonly failed: number;
  /** CPU seconds over the run: the primary (serving the scrapes), the worker, this scraper */
  readonly cpu: { readonly primary: number; readonly worker: number; readonly scraper: number };
}

/** CPU seconds (user + system) a process has used, from /proc/<pid>/stat. */
function cpuSeconds(pid: number): number {
  const fields = readFileSync(`/proc/${pid}/stat`, 'utf8').split(') ')[1]!.split(' ');
  return (Number(fields[11]) + Number(fields[12])) / CLOCK_TICKS;
}
const CLOCK_TICKS = 100;

interface BenchStatus {
  pipelines: Record<string, { pid: number | null; counters: { sinks: Record<string, { total_processed?: number }> } }>;
}

async function status(port: number): Promise<BenchStatus['pipelines'][string] | undefined> {
  const res = await fetch(`http://127.0.0.1:${port}/status`);
  return ((await res.json()) as BenchStatus).pipelines.p;
}

/** `waveEveryMs`: undefined = no scraping; 0 = one wave after another; else at most one wave per that many ms. */
async function scenario(title: string, waveEveryMs: number | undefined): Promise<Result> {
  const dir = tempDir('logrelay-bench-admin-');
  try {
    mkdirSync(join(dir.path, 'in'));
    const staged = join(dir.path, 'input.log');
    const size = writeInput(staged, LINES, LINE_BYTES);
    const port = await freePort();
    const config = dir.file(
      'node.toml',
      `[admin]\nport = ${port}\n[[pipelines]]\nname = "p"\n${fileSourceToml('f', join(dir.path, 'in'), 'check_interval_ms = 10')}${sinkToml('out', 'null')}`,
    );
    const node = spawnNode(['-c', config]);
    try {
      await waitFor(async () => (await fetch(`http://127.0.0.1:${port}/readyz`).catch(() => undefined))?.status === 200, 'node ready', 30_000);
      let done = false;
      let scrapes = 0;
      let failed = 0;
      const scraping = (async () => {
        while (waveEveryMs !== undefined && !done) {
          const next = Date.now() + waveEveryMs;
          const wave = await Promise.allSettled(
            Array.from({ length: CONCURRENT }, () => fetch(`http://127.0.0.1:${port}/metrics`).then(async (r) => (await r.text(), r.status))),
          );
          for (const w of wave) {
            if (w.status === 'fulfilled' && w.value === 200) scrapes++;
            else failed++;
          }
          while (!done && Date.now() < next) await new Promise((r) => setTimeout(r, 5));
        }
      })();
      const pid = (await status(port))?.pid;
      if (!pid) throw new Error('no worker pid in /status');
      const base = bytesRead(pid);
      const primaryPid = node.child.pid!;
      const cpu0 = { primary: cpuSeconds(primaryPid), worker: cpuSeconds(pid), scraper: process.cpuUsage() };
      const t0 = performance.now();
      renameSync(staged, join(dir.path, 'in', 'app.log'));
      await waitFor(() => bytesRead(pid) - base >= size, `${title}: the worker read the input`, DEADLINE_MS);
      const ms = performance.now() - t0;
      const scraper = process.cpuUsage(cpu0.scraper);
      const cpu = { primary: cpuSeconds(primaryPid) - cpu0.primary, worker: cpuSeconds(pid) - cpu0.worker, scraper: (scraper.user + scraper.system) / 1e6 };
      done = true;
      await scraping;
      await waitFor(async () => ((await status(port))?.counters.sinks.out?.total_processed ?? 0) >= LINES, `${title}: ${LINES} entries delivered`, 10_000);
      return { title, ms, scrapes, failed, cpu };
    } finally {
      await node.stop();
    }
  } finally {
    dir.remove();
  }
}

async function main(): Promise<void> {
  const n = CONCURRENT.toLocaleString('en-US');
  const results = [
    await scenario('no scraping', undefined),
    await scenario(`${n} concurrent /metrics, once a second`, 1000),
    await scenario(`${n} concurrent /metrics, wave after wave`, 0),
    await scenario('no scraping (again)', undefined),
  ];
  console.log(`Admin endpoint: ${LINES.toLocaleString('en-US')} entries of ${LINE_BYTES} bytes, file → raw → null; the scraper runs on the same machine\n`);
  console.log(
    markdownTable(
      ['scenario', 'entries/s', 'seconds', 'scrapes served', 'scrapes failed', 'CPU s: worker', 'primary', 'scraper'],
      results.map((r) => [
        r.title,
        Math.round((LINES / r.ms) * 1000).toLocaleString('en-US'),
        (r.ms / 1000).toFixed(2),
        r.scrapes.toLocaleString('en-US'),
        String(r.failed),
        r.cpu.worker.toFixed(2),
        r.cpu.primary.toFixed(2),
        r.cpu.scraper.toFixed(2),
      ]),
      true,
    ),
  );
}

runIfMain(import.meta.url, main);
