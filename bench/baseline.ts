// Bare-Node baseline: read the file in large chunks, split it into lines, write the lines out;
// with `json`, each line as an NDJSON object made by JSON.stringify ({time, source, message}).
// Usage: node dist/bench/baseline.js <input> <output> [json]; prints {"ms":…,"lines":…,"peak_rss":…}.

import { closeSync, openSync, readSync, writeSync } from 'node:fs';
import { peakRss } from './proc.js';

const [input, output, mode] = process.argv.slice(2);
const json = mode === 'json';
if (!input || !output) throw new Error('usage: baseline <input> <output>');
const CHUNK = 256 * 1024;

const start = performance.now();
const inFd = openSync(input, 'r');
const outFd = openSync(output, 'w');
const buf = Buffer.allocUnsafe(CHUNK);
let rest = '';
let lines = 0;
for (;;) {
  const n = readSync(inFd, buf, 0, CHUNK, null);
  if (n === 0) break;
  const parts = (rest + buf.toString('utf8', 0, n)).split('\n');
  rest = parts.pop() ?? '';
  lines += parts.length;
  if (json) {
    const time = new Date().toISOString();
    let out = '';
    for (const message of parts) out += `${JSON.stringify({ time, source: 'input.log', message })}\n`;
    writeSync(outFd, out);
  } else writeSync(outFd, `${parts.join('\n')}\n`);
}
closeSync(inFd);
closeSync(outFd);
const ms = performance.now() - start;
process.stdout.write(`${JSON.stringify({ ms, lines, peak_rss: peakRss('self') })}\n`);
