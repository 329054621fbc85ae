// Fleet end to end, run as local processes from compose.yaml and deploy/ (the test topology
// runner): edge → relay-a + relay-b → collector, mutual TLS on every hop.
//  - throughput: lines written at the edge at an offered rate, unique lines at the collector's file
//  - delay: a line's write at the edge to its appearance in the collector's SSE stream (p50, p99)
// Run: npm run build && node dist/bench/fleet.js

import { appendFileSync, mkdtempSync, readdirSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { EventSource } from 'eventsource';
import { type Fleet, startFleet } from '../test/helpers/fleet.js';
import { sleep } from '../test/helpers/node.js';
import { pct, runIfMain } from './report.js';

function uniqueAtCollector(fleet: Fleet, prefix: string): number {
  const dir = fleet.local.dirs.collector!.DATA_DIR!;
  const seen = new Set<string>();
  for (const f of readdirSync(dir).filter((x) => x.endsWith('.log'))) {
    for (const line of readFileSync(join(dir, f), 'utf8').split('\n')) {
      if (!line.includes(prefix)) continue;
      seen.add((JSON.parse(line) as { message: string }).message);
    }
  }
  return seen.size;
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
    // Edge chain sinks use on_full = "drop": past what a link sustains, entries are dropped (counted) per link.
    const d = await delay(fleet, 300, 20);
    console.log('\nwrite at the edge → collector SSE stream, 300 lines at 50 lines/s (poll-based file tail: up to 100 ms of the delay)');
    console.log(table(['samples', 'p50 ms', 'p99 ms', 'max ms'], [[`${d.length}`, pct(d, 50).toFixed(1), pct(d, 99).toFixed(1), (d.at(-1) ?? Number.NaN).toFixed(1)]]));
  } finally {
    await fleet.stopAll();
    rmSync(root, { recursive: true, force: true });
  }
}

runIfMain(import.meta.url, main, { exitWhenDone: true });
