// Link compression bench (DESIGN.md §25): one tcp_chain hop (file source → tcp_chain sink →
// tcp_chain source → null, two real nodes, as bench/chain.ts throughput), with `compression`
// none, gzip and zstd (where this Node.js runtime has it), on the bench input and on CRI lines
// whose content is a JSON log. Per run: entries/s, bytes on the wire and before compression per
// entry, wire ÷ raw, entries/s ÷ the uncompressed hop's, both workers' CPU per entry (what the
// codec costs, apart from what else shares the machine) and each worker's peak RSS. A second
// table, in this process, compresses each input's lines at gzip levels 1–6 (and memLevel 9 beside
// the default 8) as the link does (one stream, flushed per write of about 128 KiB): the ratio and
// the CPU of deflate and inflate per entry, the grounds of the level the links use (GZIP_LEVEL);
// where the runtime has zstd, its levels 1 and 3 too (ZSTD_LEVEL).
// Goal: gzip ≤ 0.2 × raw at ≥ 0.6 × entries/s; zstd ≤ 0.15 × at ≥ 0.8 ×.
// Run: npm run build && node dist/bench/compression.js (BENCH_LINES, default 1,000,000;
// BENCH_LEVELS=0 leaves out the table of levels; BENCH_THREADS=1 prints each worker's CPU by thread;
// BENCH_CODECS=none,zstd and BENCH_INPUT=0 or 1 run only those codecs, that input, for A/B pairs)

import { readFileSync } from 'node:fs';
import type { Transform } from 'node:stream';
import { GZIP_LEVEL, GZIP_MEM_LEVEL, hasZstd, streamCompressor, streamDecompressor, ZSTD_LEVEL } from '../src/chain/compression.js';
import { tempDir } from '../test/helpers/node.js';
import { LINES, throughput } from './chain.js';
import { writeInput, benchLine } from './input.js';
import { markdownTable, rate, runIfMain } from './report.js';

const WITH_LEVELS = process.env.BENCH_LEVELS !== '0';
/** BENCH_CODECS: the codecs to run (comma-separated), all this runtime has when unset */
const ONLY_CODECS = process.env.BENCH_CODECS?.split(',').map((c) => c.trim());
/** BENCH_INPUT: the one input to run (its index in INPUTS), both when unset */
const ONLY_INPUT = process.env.BENCH_INPUT;
/** the writes of the level table: about what one sink write carries (a file source's read) */
const WRITE_BYTES = 128 * 1024;
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

/** CPU time of this process so far (all threads: zlib's passes run on libuv's pool), µs. */
const cpuUs = (): number => {
  const c = process.cpuUsage();
  return c.user + c.system;
};

/** Runs `write` for each slice of `data` of WRITE_BYTES through a zlib stream, each write flushed; the bytes out. */
async function throughStream(stream: Transform, data: Buffer, step: number): Promise<Buffer<ArrayBufferLike>> {
  const out: Buffer[] = [];
  stream.on('data', (b: Buffer) => out.push(b));
  for (let at = 0; at < data.length; at += step) await new Promise<void>((resolve) => stream.write(data.subarray(at, at + step), () => resolve()));
  const ended = new Promise<void>((resolve) => stream.once('end', () => resolve()));
  stream.end();
  await ended;
  return Buffer.concat(out);
}

/** A compressor and its inflater as the link makes them (one stream, each write flushed), at `level`. */
function codecStreams(codec: 'gzip' | 'zstd', level: number, memLevel: number): { deflate: Transform; inflate: Transform } {
  return { deflate: streamCompressor(codec, level, memLevel), inflate: streamDecompressor(codec) };
}

/**
 * gzip levels (and zstd's 1 and 3, where the runtime has zstd) on one input's lines, as the link
 * compresses them: per level, ratio and CPU per entry of deflate and inflate (best of 3).
 */
async function levelRows(title: string, data: Buffer, lines: number): Promise<string[][]> {
  const rows: string[][] = [];
  const configs: { codec: 'gzip' | 'zstd'; level: number; memLevel: number }[] = [1, 2, 3, 4, 6].map((level) => ({ codec: 'gzip', level, memLevel: 8 }));
  configs.splice(1, 0, { codec: 'gzip', level: 1, memLevel: 9 });
  if (hasZstd()) configs.push({ codec: 'zstd', level: 1, memLevel: 0 }, { codec: 'zstd', level: 3, memLevel: 0 });
  // one pass untimed first: the first row paid the warm-up (its deflate and inflate read 10–25 %
  // slower than the same level's second row, memLevel 9, inflate included, which memLevel does not change)
  const warm = codecStreams('gzip', 1, 8);
  await throughStream(warm.inflate, await throughStream(warm.deflate, data, WRITE_BYTES), 64 * 1024);
  for (const { codec, level, memLevel } of configs) {
    let deflateUs = Infinity;
    let inflateUs = Infinity;
    let wire: Buffer<ArrayBufferLike> = Buffer.alloc(0);
    for (let k = 0; k < 3; k++) {
      const { deflate, inflate } = codecStreams(codec, level, memLevel);
      const t0 = cpuUs();
      wire = await throughStream(deflate, data, WRITE_BYTES);
      deflateUs = Math.min(deflateUs, cpuUs() - t0);
      const t1 = cpuUs();
      await throughStream(inflate, wire, 64 * 1024);
      inflateUs = Math.min(inflateUs, cpuUs() - t1);
    }
    const chosen = (codec === 'gzip' && level === GZIP_LEVEL && memLevel === GZIP_MEM_LEVEL) || (codec === 'zstd' && level === ZSTD_LEVEL) ? ' (the links)' : '';
    rows.push([title, codec, `${level}${chosen}`, codec === 'gzip' ? String(memLevel) : '', (wire.length / data.length).toFixed(3), (deflateUs / lines).toFixed(2), (inflateUs / lines).toFixed(2)]);
  }
  return rows;
}

export async function main(): Promise<void> {
  const dir = tempDir('logrelay-bench-compression-');
  const codecs = (hasZstd() ? ['none', 'gzip', 'zstd'] : ['none', 'gzip']).filter((c) => !ONLY_CODECS || ONLY_CODECS.includes(c));
  if (codecs.length === 0) throw new Error(`BENCH_CODECS=${process.env.BENCH_CODECS}: none of them runs here`);
  const rows: string[][] = [];
  const levels: string[][] = [];
  const perEntry = (ms: number) => ((ms * 1000) / LINES).toFixed(2);
  try {
    for (const [k, input] of INPUTS.entries()) {
      if (ONLY_INPUT !== undefined && String(k) !== ONLY_INPUT) continue;
      const path = `${dir.path}/input-${k}.log`;
      writeInput(path, LINES, LINE_BYTES, (i) => input.line(i));
      if (WITH_LEVELS) levels.push(...(await levelRows(input.title, readFileSync(path), LINES)));
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
          plainEps > 0 ? (r.eps / plainEps).toFixed(2) : 'no plain run',
          `${perEntry(r.cpuMs[0] + r.cpuMs[1])} (${perEntry(r.cpuMs[0])} + ${perEntry(r.cpuMs[1])})`,
          (r.senderRss / MiB).toFixed(0),
          (r.rss / MiB).toFixed(0),
        ]);
        // BENCH_THREADS=1: each worker's CPU by thread too (deflate and inflate run on libuv's pool, beside the event loop)
        console.error(`${input.title} ${codec}: ${rate(r.eps)} entries/s, ${(r.bytesSent / r.bytesRaw).toFixed(3)} × raw${process.env.BENCH_THREADS ? `; ${r.cpu}` : ''}`);
      }
      if (!hasZstd() && (!ONLY_CODECS || ONLY_CODECS.includes('zstd'))) rows.push([input.title, 'zstd', `n/a: Node.js ${process.version} has no zstd (22.15 or later)`, '', '', '', '', '', '', '']);
    }
  } finally {
    dir.remove();
  }
  console.log(`\nLink compression, one tcp_chain hop, ${rate(LINES)} lines per run (one run each; the CPU is shared, figures are noisy)\n`);
  console.log(markdownTable(['input', 'compression', 'entries/s', 'wire B/entry', 'raw B/entry', 'wire ÷ raw', '× plain entries/s', 'worker CPU µs/entry (sender + receiver)', 'sender RSS MiB', 'receiver RSS MiB'], rows));
  if (levels.length > 0) {
    console.log(`\ngzip levels${hasZstd() ? ' and zstd levels' : ''} on the input lines as read (in this process, writes of ${WRITE_BYTES / 1024} KiB each flushed, best of 3; the link adds its frames' ~50 B per entry)\n`);
    console.log(markdownTable(['input', 'codec', 'level', 'memLevel', 'out ÷ in', 'deflate CPU µs/entry', 'inflate CPU µs/entry'], levels));
  }
}

runIfMain(import.meta.url, main, { exitWhenDone: true });
