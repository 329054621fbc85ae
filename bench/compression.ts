// Link compression bench (DESIGN.md §25): one tcp_chain hop (file source → tcp_chain sink →
// tcp_chain source → null, two real nodes, as bench/chain.ts throughput), with `compression`
// none, gzip and zstd (where this Node.js runtime has it), on the bench input and on CRI lines
// whose content is a JSON log. Per run: entries/s, bytes on the wire and before compression per
// entry, wire ÷ raw, entries/s ÷ the uncompressed hop's, and each worker's peak RSS.
// Goal: gzip ≤ 0.2 × raw at ≥ 0.6 × entries/s; zstd ≤ 0.15 × at ≥ 0.8 ×.
// Run: npm run build && node dist/bench/compression.js (BENCH_LINES, default 1,000,000)

import { hasZstd } from '../src/chain/compression.js';
import { tempDir } from '../test/helpers/node.js';
import { throughput } from './chain.js';
import { writeInput, benchLine } from './input.js';
import { markdownTable, rate, runIfMain } from './report.js';

const LINES = Number(process.env.BENCH_LINES ?? 1_000_000);
const LINE_BYTES = 200;
const MiB = 1024 * 1024;

const LEVELS = ['info', 'info', 'info', 'debug', 'warn', 'error'];

/** Line `i` as a CRI runtime writes a JSON-logging container's line (about 250 bytes). */
function criJsonLine(i: number): string {
  const time = new Date(1_700_000_000_000 + i).toISOString();
  const trace = ((i * 2654435761) >>> 0).toString(16).padStart(8, '0');
  const json = JSON.stringify({ ts: time, level: LEVELS[i % LEVELS.length], logger: 'http.server', msg: 'request handled', method: i % 4 === 0 ? 'POST' : 'GET', path: `/api/v1/items/${i % 9973}`, status: i % 50 === 0 ? 500 : 200, duration_ms: i % 250, trace_id: `${trace}${trace}` });
  return `${time.slice(0, -1)}123456Z ${i % 5 === 0 ? 'stderr' : 'stdout'} F ${json}\n`;
}

const INPUTS = [
  { title: 'bench input (200 B lines)', line: (i: number) => benchLine(i, LINE_BYTES) },
  { title: 'CRI JSON lines', line: criJsonLine },
];

export async function main(): Promise<void> {
  const dir = tempDir('logrelay-bench-compression-');
  const codecs = hasZstd() ? ['none', 'gzip', 'zstd'] : ['none', 'gzip'];
  const rows: string[][] = [];
  try {
    for (const [k, input] of INPUTS.entries()) {
      const path = `${dir.path}/input-${k}.log`;
      writeInput(path, LINES, LINE_BYTES, (i) => input.line(i));
      let plainEps = 0;
      for (const codec of codecs) {
        const r = await throughput({ title: `tcp_chain ${codec}`, link: 'tcp_chain', tls: false, compression: codec }, undefined, dir, path, rows.length + 1, LINES);
        if (codec === 'none') plainEps = r.eps;
        rows.push([
          input.title,
          codec,
          rate(r.eps),
          (r.bytesSent / LINES).toFixed(1),
          (r.bytesRaw / LINES).toFixed(1),
          (r.bytesSent / r.bytesRaw).toFixed(3),
          (r.eps / plainEps).toFixed(2),
          (r.senderRss / MiB).toFixed(0),
          (r.rss / MiB).toFixed(0),
        ]);
        console.error(`${input.title} ${codec}: ${rate(r.eps)} entries/s, ${(r.bytesSent / r.bytesRaw).toFixed(3)} × raw`);
      }
      if (!hasZstd()) rows.push([input.title, 'zstd', `n/a: Node.js ${process.version} has no zstd (22.15 or later)`, '', '', '', '', '', '']);
    }
  } finally {
    dir.remove();
  }
  console.log(`\nLink compression, one tcp_chain hop, ${rate(LINES)} lines per run (one run each; the CPU is shared, figures are noisy)\n`);
  console.log(markdownTable(['input', 'compression', 'entries/s', 'wire B/entry', 'raw B/entry', 'wire ÷ raw', '× plain entries/s', 'sender RSS MiB', 'receiver RSS MiB'], rows));
}

runIfMain(import.meta.url, main, { exitWhenDone: true });
