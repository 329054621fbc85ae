// Loaded into every node process of a memory bench with `--import` (BENCH_BREAKDOWN=1 in
// bench/memory.ts): samples process.memoryUsage() every 50 ms and, at each new peak of the resident
// set, V8's heap spaces, and writes them to LOGRELAY_MEM_SAMPLE_DIR/<pid>.json every second and at
// exit. What the process held at its peak: the JS heap (used, and committed by young and old
// generation), external memory (Buffers), and the rest of RSS (the node binary's pages, code, malloc).

import { writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { getHeapSpaceStatistics } from 'node:v8';

/** The figures of one process at the peak of its RSS, bytes. */
export interface MemorySample {
  readonly pid: number;
  readonly rss: number;
  readonly heapUsed: number;
  readonly external: number;
  readonly arrayBuffers: number;
  /** committed bytes of the young generation (both semi-spaces and its large objects) */
  readonly young: number;
  /** committed bytes of the old generation (old, code and large object spaces) */
  readonly old: number;
}

const dir = process.env.LOGRELAY_MEM_SAMPLE_DIR;
if (dir) {
  let peak: MemorySample = { pid: process.pid, rss: 0, heapUsed: 0, external: 0, arrayBuffers: 0, young: 0, old: 0 };
  const sample = () => {
    const m = process.memoryUsage();
    if (m.rss <= peak.rss) return;
    let young = 0;
    let old = 0;
    for (const s of getHeapSpaceStatistics()) {
      if (s.space_name.startsWith('new')) young += s.space_size;
      else old += s.space_size;
    }
    peak = { pid: process.pid, rss: m.rss, heapUsed: m.heapUsed, external: m.external, arrayBuffers: m.arrayBuffers, young, old };
  };
  const write = () => {
    try {
      writeFileSync(join(dir, `${process.pid}.json`), JSON.stringify(peak));
    } catch {
      /* the bench removed its directory: nothing to report to */
    }
  };
  setInterval(sample, 50).unref();
  setInterval(write, 1000).unref();
  process.on('exit', () => {
    sample();
    write();
  });
}
